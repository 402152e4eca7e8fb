/** The operator API (admin scope): accounts, keys (and their rate limits) and credits. */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { Wire } from "../../services/ApiError.ts"
import {
  AccountLimitsRecord,
  AccountRecord,
  AddCredits, CreateAccount, CreatedKey, CreateKey,
  KeyRecord,
  LedgerEntryRecord,
  SetAccountLimits,
  UpdateKeyLimits
} from "./Records.ts"
import { AccountList, ApiKeyList, ListParams } from "./Lists.ts"
import { documented } from "./operationDocs.ts"
import { AdminScope } from "./Security.ts"

const IdPath = Schema.Struct({ id: Schema.String })

export class AdminGroup extends HttpApiGroup.make("admin")
  .add(
    HttpApiEndpoint.post("createAccount", "/v1/admin/accounts")
      .setPayload(CreateAccount)
      .addSuccess(AccountRecord)
      .annotateContext(documented("Create an account", "Opens an account, optionally with a first credit (reference `initial`)."))
  )
  .add(
    HttpApiEndpoint.get("listAccounts", "/v1/admin/accounts")
      .setUrlParams(ListParams)
      .addSuccess(AccountList)
      .annotateContext(documented("List accounts", "Newest first, a page at a time: pass `next_cursor` as `cursor` for the next."))
  )
  .add(
    HttpApiEndpoint.get("getAccount", "/v1/admin/accounts/:id")
      .setPath(IdPath)
      .addSuccess(AccountRecord)
      .addError(Wire.NotFound)
      .annotateContext(documented("Get an account", "With its balance, what open calls hold and what is available."))
  )
  .add(
    HttpApiEndpoint.patch("setAccountLimits", "/v1/admin/accounts/:id/limits")
      .setPath(IdPath)
      .setPayload(SetAccountLimits)
      .addSuccess(AccountLimitsRecord)
      .addError(Wire.NotFound)
      .annotateContext(documented("Set an account's concurrency cap", "`null` removes it: the config's default applies."))
  )
  .add(
    HttpApiEndpoint.post("createKey", "/v1/admin/accounts/:id/keys")
      .setPath(IdPath)
      .setPayload(CreateKey)
      .addSuccess(CreatedKey)
      .addError(Wire.NotFound)
      .annotateContext(documented("Issue an API key", "The response holds the secret `key`; it is never shown again."))
  )
  .add(
    HttpApiEndpoint.get("listKeys", "/v1/admin/accounts/:id/keys")
      .setPath(IdPath)
      .setUrlParams(ListParams)
      .addSuccess(ApiKeyList)
      .addError(Wire.NotFound)
      .annotateContext(documented(
        "List an account's API keys",
        "Newest first, revoked ones included (with `revoked_at`), never a secret; a page at a time like accounts."
      ))
  )
  .add(
    HttpApiEndpoint.patch("updateKey", "/v1/admin/keys/:id")
      .setPath(IdPath)
      .setPayload(UpdateKeyLimits)
      .addSuccess(KeyRecord)
      .addError(Wire.NotFound)
      .annotateContext(documented("Change a key's rate limits", "A number sets a limit, `null` removes it, an absent field keeps it."))
  )
  .add(
    HttpApiEndpoint.del("revokeKey", "/v1/admin/keys/:id")
      .setPath(IdPath)
      .addSuccess(KeyRecord)
      .addError(Wire.NotFound)
      .annotateContext(documented("Revoke an API key", "Refused from its next request on; revoking again keeps the first time."))
  )
  .add(
    HttpApiEndpoint.post("addCredits", "/v1/admin/accounts/:id/credits")
      .setPath(IdPath)
      .setPayload(AddCredits)
      .addSuccess(LedgerEntryRecord)
      .addError(Wire.NotFound)
      .addError(Wire.Conflict)
      .annotateContext(documented(
        "Add credit to an account",
        "Idempotent by `reference`: the same reference and amount answers the first entry; another amount is a conflict."
      ))
  )
  .annotate(OpenApi.Description, "The operator API (admin scope): accounts, API keys, limits and credits")
  .middleware(AdminScope)
{}
