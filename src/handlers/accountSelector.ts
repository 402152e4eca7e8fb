/**
 * The `accountId` selector of every monitoring read (logs, usage, monitoring,
 * receipts), decided here only: absent, the key's own account; the key's own
 * account, fine; another account, only for an admin key (an unknown one is
 * 404 for it), 403 for any other key, whether that account exists or not.
 * An operator key has no account of its own, so it must name one.
 */
import { Effect } from "effect"
import { Accounts } from "../../services/Accounts.ts"
import { Forbidden, InvalidRequest } from "../../services/ApiError.ts"
import type { Principal } from "../../services/ApiKeys.ts"

export const isAdmin = (principal: Principal) => principal.scopes.includes("admin")

export const selectAccount = (principal: Principal, named: string | undefined) =>
  Effect.gen(function*() {
    if (named === undefined || named === principal.accountId) {
      if (principal.accountId !== null) return principal.accountId
      return yield* new InvalidRequest({
        message: "An operator key has no account of its own: name one with accountId.",
        param: "accountId"
      })
    }
    if (!isAdmin(principal)) {
      return yield* new Forbidden({ message: "Only an admin key may name another account (accountId).", param: "accountId" })
    }
    const accounts = yield* Accounts
    return (yield* accounts.get(named)).id
  })
