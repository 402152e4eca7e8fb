/** The operator API: translates between wire records and the Accounts and ApiKeys services (the CLI prints the same records). */
import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { type Account, Accounts, type LedgerEntry } from "../../services/Accounts.ts"
import { type ApiKeyRecord, ApiKeys } from "../../services/ApiKeys.ts"
import { formatUsd } from "../../services/Money.ts"
import type { Page } from "../../services/Pagination.ts"
import { Api } from "../api/Api.ts"
import { cursorOf, listRecord, pageRequestOf } from "../api/Lists.ts"
import type { AccountLimitsRecord, AccountRecord, KeyRecord, LedgerEntryRecord } from "../api/Records.ts"

export const toAccountRecord = (account: Account): typeof AccountRecord.Type => ({
  id: account.id,
  object: "account",
  name: account.name,
  balance_usd: formatUsd(account.balance),
  reserved_usd: formatUsd(account.reserved),
  available_usd: formatUsd(account.balance - account.reserved),
  created_at: account.createdAt.toISOString()
})

export const toKeyRecord = (key: ApiKeyRecord): typeof KeyRecord.Type => ({
  id: key.id,
  object: "api_key",
  account_id: key.accountId,
  name: key.name,
  hint: key.hint,
  scopes: key.scopes,
  rpm: key.rpm,
  tpm: key.tpm,
  created_at: key.createdAt.toISOString(),
  revoked_at: key.revokedAt?.toISOString() ?? null
})

export const toLedgerRecord = (entry: LedgerEntry): typeof LedgerEntryRecord.Type => ({
  id: entry.id,
  object: "ledger_entry",
  account_id: entry.accountId,
  kind: entry.kind,
  amount_usd: formatUsd(entry.amount),
  reference: entry.reference,
  balance_after_usd: formatUsd(entry.balanceAfter),
  created_at: entry.createdAt.toISOString()
})

export const toAccountLimitsRecord = (
  limits: { readonly accountId: string; readonly concurrency: number | null }
): typeof AccountLimitsRecord.Type => ({
  object: "account_limits",
  account_id: limits.accountId,
  concurrency: limits.concurrency
})

export const toAccountList = (page: Page<Account>) => listRecord({ ...page, items: page.items.map(toAccountRecord) }, cursorOf)
export const toKeyList = (page: Page<ApiKeyRecord>) => listRecord({ ...page, items: page.items.map(toKeyRecord) }, cursorOf)

export const AdminHandlers = HttpApiBuilder.group(Api, "admin", (handlers) =>
  Effect.gen(function*() {
    const accounts = yield* Accounts
    const keys = yield* ApiKeys
    return handlers
      .handle("createAccount", ({ payload }) =>
        Effect.map(accounts.create({ name: payload.name, credit: payload.credit_usd }), toAccountRecord))
      .handle("listAccounts", ({ urlParams }) =>
        Effect.map(accounts.list(pageRequestOf(urlParams)), toAccountList))
      .handle("getAccount", ({ path }) => Effect.map(accounts.get(path.id), toAccountRecord))
      .handle("setAccountLimits", ({ path, payload }) =>
        Effect.map(keys.setAccountConcurrency(path.id, payload.concurrency), toAccountLimitsRecord))
      .handle("createKey", ({ path, payload }) =>
        Effect.map(keys.create(path.id, payload), ({ key, record }) => ({ ...toKeyRecord(record), key })))
      .handle("listKeys", ({ path, urlParams }) =>
        Effect.map(keys.list(path.id, pageRequestOf(urlParams)), toKeyList))
      .handle("updateKey", ({ path, payload }) => Effect.map(keys.setLimits(path.id, payload), toKeyRecord))
      .handle("revokeKey", ({ path }) => Effect.map(keys.revoke(path.id), toKeyRecord))
      .handle("addCredits", ({ path, payload }) =>
        Effect.map(
          accounts.addCredit(path.id, { amount: payload.amount_usd, reference: payload.reference }),
          toLedgerRecord
        ))
  }))
