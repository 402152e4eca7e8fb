/** The operator API (admin scope): accounts, keys (and their rate limits) and credits. */
import { HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
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
import { AdminScope } from "./Security.ts"

const IdPath = Schema.Struct({ id: Schema.String })

export class AdminGroup extends HttpApiGroup.make("admin")
  .add(HttpApiEndpoint.post("createAccount", "/v1/admin/accounts").setPayload(CreateAccount).addSuccess(AccountRecord))
  .add(
    HttpApiEndpoint.get("getAccount", "/v1/admin/accounts/:id").setPath(IdPath).addSuccess(AccountRecord).addError(
      Wire.NotFound
    )
  )
  .add(
    HttpApiEndpoint.patch("setAccountLimits", "/v1/admin/accounts/:id/limits")
      .setPath(IdPath)
      .setPayload(SetAccountLimits)
      .addSuccess(AccountLimitsRecord)
      .addError(Wire.NotFound)
  )
  .add(
    HttpApiEndpoint.post("createKey", "/v1/admin/accounts/:id/keys")
      .setPath(IdPath)
      .setPayload(CreateKey)
      .addSuccess(CreatedKey)
      .addError(Wire.NotFound)
  )
  .add(
    HttpApiEndpoint.patch("updateKey", "/v1/admin/keys/:id")
      .setPath(IdPath)
      .setPayload(UpdateKeyLimits)
      .addSuccess(KeyRecord)
      .addError(Wire.NotFound)
  )
  .add(
    HttpApiEndpoint.del("revokeKey", "/v1/admin/keys/:id").setPath(IdPath).addSuccess(KeyRecord).addError(Wire.NotFound)
  )
  .add(
    HttpApiEndpoint.post("addCredits", "/v1/admin/accounts/:id/credits")
      .setPath(IdPath)
      .setPayload(AddCredits)
      .addSuccess(LedgerEntryRecord)
      .addError(Wire.NotFound)
      .addError(Wire.Conflict)
  )
  .middleware(AdminScope)
{}
