/** The ledger of an unbilled gateway, for benchmarks that price billing: the same calls, nothing reserved or written. */
import { Effect, Layer } from "effect"
import { NotFound } from "../services/ApiError.ts"
import { Ledger, receiptOf, settlingAtOnce } from "../services/Ledger.ts"

let fakeIds = 0

/** Reserves nothing, charges nothing, writes nothing. */
const settle: Ledger["Type"]["settle"] = (reservation, bill) =>
  Effect.sync(() => {
    const now = new Date()
    return receiptOf(reservation, bill, { total: bill.cost.total, balanceAfter: 0n, createdAt: now, settledAt: now })
  })

export const NoopLedger = Layer.succeed(Ledger, {
  reserve: ({ accountId, amount, requestId }) =>
    Effect.sync(() => ({ id: `rcpt_noop${++fakeIds}`, accountId, requestId, amount, reservedAt: new Date() })),
  settle,
  settleQueued: settlingAtOnce(settle),
  release: () => Effect.void,
  renew: () => Effect.void,
  sweepExpired: () => Effect.succeed(0),
  receipt: (_accountId, id) => Effect.fail(new NotFound({ message: `No receipt ${id}.`, param: "id" }))
})
