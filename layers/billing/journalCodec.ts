/**
 * One line of the settlement journal: a kept settlement as JSON, its money
 * (bigint nano-dollars) as decimal strings of nanos and its dates as RFC 3339,
 * so a line read back is exactly the settlement that was kept. A line that
 * does not parse (a write cut short by a crash) is skipped by the reader.
 */
import type { Bill, Reservation } from "../../services/Ledger.ts"
import type { Cost } from "../../services/Pricing.ts"
import type { KeptSettlement } from "../../services/SettlementJournal.ts"

/** Format version of a line; a reader refuses lines of another version. */
const VERSION = 1

const nanos = (value: bigint) => value.toString()
const bigintOf = (value: unknown): bigint => {
  if (typeof value !== "string" || !/^-?\d+$/.test(value)) throw new Error(`not an amount in nanos: ${String(value)}`)
  return BigInt(value)
}

export const encodeLine = ({ bill, reservation }: KeptSettlement): string =>
  JSON.stringify({
    v: VERSION,
    reservation: {
      id: reservation.id,
      accountId: reservation.accountId,
      requestId: reservation.requestId,
      amount: nanos(reservation.amount),
      reservedAt: reservation.reservedAt.toISOString(),
      ...(reservation.leaseId !== undefined ? { leaseId: reservation.leaseId } : {})
    },
    bill: {
      ...bill,
      price: { input: nanos(bill.price.input), output: bill.price.output === undefined ? null : nanos(bill.price.output) },
      cost: costNanos(bill.cost),
      ...(bill.lineItems !== undefined ? { lineItems: bill.lineItems.map((item) => ({ ...item, cost: costNanos(item.cost) })) } : {})
    }
  }) + "\n"

const costNanos = (cost: Cost) => ({ upstream: nanos(cost.upstream), margin: nanos(cost.margin), total: nanos(cost.total) })
const costOf = (cost: any): Cost => ({ upstream: bigintOf(cost.upstream), margin: bigintOf(cost.margin), total: bigintOf(cost.total) })

/** The settlement of a line, or undefined for a line that is torn, empty or of another version. */
export const decodeLine = (line: string): KeptSettlement | undefined => {
  try {
    const parsed = JSON.parse(line) as { v: number; reservation: any; bill: any }
    if (parsed.v !== VERSION) return undefined
    const reservation: Reservation = {
      id: String(parsed.reservation.id),
      accountId: String(parsed.reservation.accountId),
      requestId: String(parsed.reservation.requestId),
      amount: bigintOf(parsed.reservation.amount),
      reservedAt: new Date(parsed.reservation.reservedAt),
      ...(typeof parsed.reservation.leaseId === "string" ? { leaseId: parsed.reservation.leaseId } : {})
    }
    const { cost, price } = parsed.bill
    const bill: Bill = {
      ...parsed.bill,
      price: { input: bigintOf(price.input), output: price.output === null ? undefined : bigintOf(price.output) },
      cost: costOf(cost),
      ...(Array.isArray(parsed.bill.lineItems)
        ? { lineItems: parsed.bill.lineItems.map((item: any) => ({ ...item, cost: costOf(item.cost) })) }
        : {})
    }
    return { reservation, bill }
  } catch {
    return undefined
  }
}
