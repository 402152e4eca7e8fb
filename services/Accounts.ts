/**
 * Customer accounts and their prepaid credit. The balance is always the sum
 * of the account's ledger entries; credits are idempotent by `reference`.
 */
import { Context, type Effect, Schema } from "effect"
import type { Conflict, NotFound } from "./ApiError.ts"
import type { Nanos } from "./Money.ts"
import type { Page, PageRequest } from "./Pagination.ts"

export interface Account {
  readonly id: string
  readonly name: string
  readonly balance: Nanos
  /** Held by open reservations of calls in flight. */
  readonly reserved: Nanos
  readonly createdAt: Date
}

export interface LedgerEntry {
  readonly id: string
  readonly accountId: string
  readonly kind: "credit" | "charge"
  /** Positive for credits, negative for charges. */
  readonly amount: Nanos
  readonly reference: string | null
  readonly balanceAfter: Nanos
  readonly createdAt: Date
}

export const AccountName = Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200))
export const CreditReference = Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200))

export class Accounts extends Context.Tag("svc/Accounts")<Accounts, {
  /** Creates an account, with an optional first credit (reference `initial`). */
  readonly create: (input: { readonly name: string; readonly credit?: Nanos | undefined }) => Effect.Effect<Account>
  readonly get: (id: string) => Effect.Effect<Account, NotFound>
  /** Every account, newest first, one page at a time. */
  readonly list: (page: PageRequest) => Effect.Effect<Page<Account>>
  /**
   * Adds credit. The same reference with the same amount returns the first
   * entry and adds nothing; with another amount it is a conflict.
   */
  readonly addCredit: (
    accountId: string,
    input: { readonly amount: Nanos; readonly reference: string }
  ) => Effect.Effect<LedgerEntry, NotFound | Conflict>
}>() {}
