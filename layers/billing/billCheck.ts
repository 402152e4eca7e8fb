/**
 * What a ledger refuses to write, checked before any statement: token
 * figures that are not non-negative integers within the receipts' columns,
 * and amounts below zero or past `numeric(38, 9)`. Billing checks an
 * upstream's usage first (usageCheck.ts), so a bill refused here is a defect
 * of ours: that one settlement dies with the reason (and is logged), and
 * the others of its batch go on.
 */
import type { Bill } from "../../services/Ledger.ts"
import { isTokenCount } from "./usageCheck.ts"

/** Nano-dollars `numeric(38, 9)` can hold: below 10²⁹ USD. */
const MAX_NANOS = 10n ** 38n

/** Why a bill cannot be written, or undefined when it can. */
export const billProblem = (bill: Bill): string | undefined => {
  if (!isTokenCount(bill.usage.inputTokens)) return `input tokens ${bill.usage.inputTokens} are not a token count`
  if (!isTokenCount(bill.usage.outputTokens)) return `output tokens ${bill.usage.outputTokens} are not a token count`
  for (const [name, nanos] of [["total", bill.cost.total], ["upstream cost", bill.cost.upstream]] as const) {
    if (nanos < 0n || nanos >= MAX_NANOS) return `${name} ${nanos} nano-dollars is out of range`
  }
  return undefined
}

/** The defect a refused bill dies with. */
export const refusedBill = (reservationId: string, problem: string) =>
  new Error(`settlement of ${reservationId} refused before writing: ${problem}`)
