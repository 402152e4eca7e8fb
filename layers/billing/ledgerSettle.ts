/**
 * The ledger's settlement statement: one account's calls settled together —
 * each open reservation closed once, charged what its bill says even above
 * what it held (the excess is a `payment.overage` event, and the balance may
 * go below zero by it), and its receipt (which is its `charge` ledger entry too:
 * the `ledger` view reads it, migration 0025) and events written. A
 * call the sweeper got to first (it outlived its lease) is settled alone
 * afterwards. One bad settlement cannot fail the others: bills are checked
 * before the statement (billCheck.ts), and if the statement fails anyway its
 * calls are settled one by one, so only the faulty one fails (logged).
 */
import type { SqlClient } from "@effect/sql"
import { Cause, Effect, Exit } from "effect"
import type { Ids } from "../../services/Ids.ts"
import type { Receipt } from "../../services/Ledger.ts"
import { isDatabaseOutage } from "../../services/DatabaseStatus.ts"
import { formatUsd, fromNumericColumn, type Nanos } from "../../services/Money.ts"
import { keptInReceipt } from "../events/receiptEvents.ts"
import { type JsonField, jsonRows } from "../storage/jsonRows.ts"
import type { StatementRunner } from "../storage/pgPool.ts"
import { billProblem, refusedBill } from "./billCheck.ts"
import { lineItemColumn, type SettleItem, settledReceipt, type SettledRow } from "./ledgerRows.ts"

const money = fromNumericColumn
const usd = formatUsd
const min = (a: Nanos, b: Nanos) => (a < b ? a : b)

/** A settlement's input fields, in the order of each call's JSON array (`settlementInput`). */
const SETTLEMENT_FIELDS: ReadonlyArray<JsonField> = [
  ["id", "text"], ["request_id", "text"], ["endpoint", "text"], ["model", "text"], ["tier", "text"],
  ["privacy_class", "text"], ["input_tokens", "int"], ["output_tokens", "int"], ["input_price", "numeric"],
  ["output_price", "numeric"], ["upstream", "numeric"], ["total", "numeric"], ["estimated", "numeric"],
  ["reserved_at", "timestamptz"], ["attempts", "jsonb"], ["provider_id", "text"],
  ["attestation_verdicts", "jsonb"], ["line_items", "jsonb"], ["key_id", "text"], ["call_events", "jsonb"],
  ["stored_events", "jsonb"], ["lease_id", "text"]
]

/**
 * A settlement's input rows from parameter `param`, one JSON array a call (layers/storage/jsonRows.ts),
 * with `ord` its place in the batch: parsing objects of 24 keys was a quarter of PostgreSQL's time on a
 * hot account (docs/performance.md, item 80).
 */
export const settlementRows = (param: string) => jsonRows(param, SETTLEMENT_FIELDS)

/**
 * What a settlement writes once its account row is charged (`charged`, with `balance_before`):
 * the receipts and the `settled_events` to insert with any others. A
 * receipt's own events (`payment.settled`, `receipt.created`, and `payment.reserved` for a call
 * held from a lease: `leased`) are read from its row at `event_seq`, not stored (migration 0022),
 * and so are the call's routing and privacy events it keeps in `call_events` (migration 0023,
 * layers/events/receiptEvents.ts); a call's other events are `stored_events`. A rare `payment.overage` is
 * stored with an id made from the receipt's (`o`), as those read from it are: no call sends one (item 107).
 */
export const SETTLEMENT_WRITES = `
  receipt AS (
    INSERT INTO receipts (
      id, account_id, request_id, endpoint, model, tier, privacy_class, input_tokens, output_tokens,
      input_per_mtok_usd, output_per_mtok_usd, upstream_usd, margin_usd, total_usd, estimated_usd,
      reserved_at, balance_after_usd, attempts, provider_id, attestation_verdicts, line_items, key_id, leased, event_seq,
      call_events)
    SELECT
      id, $2, request_id, endpoint, model, tier, privacy_class, input_tokens, output_tokens,
      input_price, output_price, upstream, charge - upstream, charge, estimated, reserved_at,
      charged.balance_before - sum(charge) OVER (ORDER BY ord), attempts, provider_id, attestation_verdicts,
      line_items, key_id, lease_id IS NOT NULL, nextval('event_positions'), call_events
    FROM billed, charged
    RETURNING *
  ), settled_events AS (
    SELECT 'evt_' || substr(receipt.id, strpos(receipt.id, '_') + 1) || 'o' AS id, 'payment.overage' AS type,
           receipt.request_id, receipt.id AS receipt_id,
           jsonb_build_object(
             'held_usd', billed.held::text,
             'charged_usd', receipt.total_usd::text,
             'overage_usd', (receipt.total_usd - billed.held)::text) AS data, now() AS created_at
    FROM receipt JOIN billed USING (id) WHERE receipt.total_usd > billed.held
    UNION ALL
    SELECT call_event.id, call_event.type, receipt.request_id, receipt.id, call_event.data, now()
    FROM receipt JOIN billed USING (id),
         jsonb_to_recordset(billed.stored_events) AS call_event(id text, type text, data jsonb)
  )`

/**
 * Closes the open reservations of the calls in `input` (each once) and joins each to what it held.
 * The plan must be a primary-key lookup per call whatever the statistics said when the statement
 * was prepared (a generic plan made on a fresh database is kept): so the ids go in as an array,
 * and "open" is written as "neither settled nor released", which the partial index of open
 * reservations cannot serve. Either index, planned for a small table, was read whole, dead entries
 * included, on every settlement. A batch of leased calls (nothing to close) skips it: a plan made on
 * a small table scans it, and it grows by a row a call until the next ANALYZE.
 */
export const SETTLEMENT_CLOSING = `
  closed AS (
    UPDATE reservations SET status = 'settled', closed_at = now()
    WHERE reservations.id = ANY (ARRAY(SELECT id FROM input WHERE lease_id IS NULL)) AND reservations.account_id = $2
      AND reservations.status NOT IN ('settled', 'released') AND EXISTS (SELECT FROM input WHERE lease_id IS NULL)
    RETURNING reservations.id, reservations.amount_usd
  ), carved AS (
    INSERT INTO reservations (id, account_id, request_id, amount_usd, status, created_at, expires_at, closed_at)
    SELECT id, $2, request_id, estimated, 'settled', least(reserved_at, now()), now(), now()
    FROM input WHERE lease_id IN (SELECT id FROM credit_leases WHERE account_id = $2)
    ON CONFLICT (id) DO NOTHING
    RETURNING id, amount_usd
  ), billed AS (
    SELECT input.*, input.total AS charge, closed.amount_usd AS held
    FROM input JOIN closed USING (id)
    UNION ALL
    SELECT input.*, input.total, carved.amount_usd
    FROM input JOIN carved USING (id)
  ), unleased AS (
    UPDATE credit_leases SET amount_usd = credit_leases.amount_usd - per_lease.held
    FROM (SELECT lease_id, sum(held) AS held FROM billed WHERE lease_id IS NOT NULL GROUP BY lease_id) per_lease
    WHERE credit_leases.id = per_lease.lease_id
    RETURNING per_lease.held
  ), freed AS (
    SELECT coalesce((SELECT sum(held) FROM billed WHERE lease_id IS NULL), 0)
           + coalesce((SELECT sum(held) FROM unleased), 0) AS held
  )`

/**
 * The settlement of a batch, in one statement: $1 the calls (JSON, `settlementInput`), $2 the
 * account. Closes each open reservation, charges its bill (an overage event where that is more
 * than it held), and writes the receipts and events. A call whose
 * reservation is not open gets no receipt row back.
 */
export const SETTLE = `
  WITH input AS (${settlementRows("$1")}
  ), ${SETTLEMENT_CLOSING}, charged AS (
    UPDATE accounts
    SET balance_usd = balance_usd - (SELECT sum(charge) FROM billed),
        reserved_usd = reserved_usd - (SELECT held FROM freed)
    WHERE id = $2 AND EXISTS (SELECT 1 FROM billed)
    RETURNING balance_usd + (SELECT sum(charge) FROM billed) AS balance_before
  ), ${SETTLEMENT_WRITES}, event AS (
    INSERT INTO events (id, type, account_id, request_id, receipt_id, data, created_at)
    SELECT id, type, $2, request_id, receipt_id, data, created_at FROM settled_events
  )
  SELECT id, total_usd, balance_after_usd, created_at, settled_at FROM receipt`

/**
 * Settles one account's calls; answers each call's exit, in order. `run` runs the batch statements
 * (on the pool); a call the sweeper got to first is settled in a transaction of `sql`.
 */
export const makeSettleBatch = (run: StatementRunner, sql: SqlClient.SqlClient, ids: typeof Ids.Service) => {
  const inTransaction: StatementRunner = (text, values) => sql.unsafe(text, values) // on the transaction's connection

  /** The settlement row of one call, as the batch statement reads it: `SETTLEMENT_FIELDS`' values, in order. */
  const settlementInput = ({ bill, reservation }: SettleItem) => {
    const events = bill.events ?? []
    // A call's events are kept in its receipt (no ids: read from it), or stored as rows.
    const kept = keptInReceipt(events)
    return [
      reservation.id,
      reservation.requestId,
      bill.endpoint,
      bill.model,
      bill.tier,
      bill.privacyClass,
      bill.usage.inputTokens,
      bill.usage.outputTokens,
      usd(bill.price.input),
      bill.price.output === undefined ? null : usd(bill.price.output),
      usd(bill.cost.upstream),
      usd(bill.cost.total),
      usd(reservation.amount),
      reservation.reservedAt.toISOString(),
      bill.attempts,
      bill.providerId,
      bill.attestationVerdicts ?? null,
      bill.lineItems === undefined ? null : bill.lineItems.map(lineItemColumn),
      bill.keyId ?? null,
      kept && events.length > 0 ? events : null,
      kept ? null : events.map((event) => ({ id: ids.make("evt"), type: event.type, data: event.data })),
      reservation.leaseId ?? null
    ]
  }

  /** Settles calls of one account in one statement (`SETTLE`), on the pool unless `on` says otherwise. */
  const settleStatement = (accountId: string, items: ReadonlyArray<SettleItem>, on: StatementRunner = run) =>
    on<SettledRow>(SETTLE, [
      JSON.stringify(items.map(settlementInput)),
      accountId
    ])

  /**
   * The sweeper freed the reservation first (the call outlived its lease), or the credit lease the
   * call was held from (its process stalled past the lease's time), so it holds nothing: hold
   * again what the call costs, up to what is available now, and settle as usual (charging the
   * rest as an overage). A call held from a lease gets its reservation row (and its
   * `payment.reserved` event) here.
   */
  const settleAfterSweep = (item: SettleItem) =>
    Effect.gen(function*() {
      const { accountId, id, leaseId } = item.reservation
      const [account] = yield* sql<{ available: string }>`
        SELECT greatest(balance_usd - reserved_usd, 0)::text AS available
        FROM accounts WHERE id = ${accountId} FOR UPDATE`
      const hold = usd(min(item.bill.cost.total, money(account!.available)))
      const reopened = leaseId === undefined
        ? sql`
          UPDATE reservations SET status = 'open', amount_usd = ${hold}::numeric, closed_at = NULL
          WHERE id = ${id} AND status = 'released'
          RETURNING account_id`
        : sql`
          WITH made AS (
            INSERT INTO reservations (id, account_id, request_id, amount_usd, status, created_at, expires_at)
            VALUES (${id}, ${accountId}, ${item.reservation.requestId}, ${hold}::numeric, 'open',
                    least(${item.reservation.reservedAt}::timestamptz, now()), now())
            ON CONFLICT (id) DO NOTHING
            RETURNING id, account_id, request_id, amount_usd, created_at
          ), event AS (
            INSERT INTO events (id, type, account_id, request_id, receipt_id, data, created_at)
            SELECT ${ids.make("evt")}, 'payment.reserved', account_id, request_id, id,
                   jsonb_build_object('amount_usd', amount_usd::text), created_at
            FROM made
          )
          SELECT account_id FROM made`
      const [held] = yield* reopened
      if (held !== undefined) yield* sql`UPDATE accounts SET reserved_usd = reserved_usd + ${hold}::numeric WHERE id = ${accountId}`
      // Settled as a reservation of its own now (its row is open).
      const [row] = yield* settleStatement(accountId, [{ ...item, reservation: { ...item.reservation, leaseId: undefined } }], inTransaction)
      if (row === undefined) return yield* Effect.dieMessage(`Reservation ${id} was settled already.`)
      return settledReceipt(item, row)
    }).pipe(sql.withTransaction, Effect.orDie)

  /** Settles calls that are known to be writable: together, else (the statement failed) one by one. */
  const settleWritable = (accountId: string, items: ReadonlyArray<SettleItem>) =>
    Effect.gen(function*() {
      const together = yield* Effect.exit(settleStatement(accountId, items))
      if (Exit.isSuccess(together)) return yield* answerRows(items, together.value)
      // An outage fails every statement alike: nothing to isolate, and DatabaseStatus logs it once.
      if (items.length === 1 || isDatabaseOutage(together.cause)) {
        return yield* Effect.forEach(items, (item) => failedAlone(item, together.cause))
      }
      yield* Effect.logWarning(`a settlement statement of ${items.length} calls failed; settling them one by one`).pipe(
        Effect.annotateLogs({ account: accountId, cause: Cause.pretty(together.cause) })
      )
      return yield* Effect.forEach(items, (item) =>
        Effect.exit(settleStatement(accountId, [item])).pipe(
          Effect.flatMap((alone) =>
            Exit.isSuccess(alone)
              ? Effect.map(answerRows([item], alone.value), ([exit]) => exit!)
              : failedAlone(item, alone.cause)
          )
        ))
    })

  /** Each call's receipt from the rows a statement returned (a loop: only a call swept first, with no row, needs an effect). */
  const answerRows = (items: ReadonlyArray<SettleItem>, rows: ReadonlyArray<SettledRow>) => {
    const byId = new Map(rows.map((row) => [row.id, row]))
    const exits = items.map((item) => {
      const row = byId.get(item.reservation.id)
      return row === undefined ? undefined : Exit.succeed(settledReceipt(item, row))
    })
    return exits.includes(undefined)
      ? Effect.forEach(items, (item, i) => exits[i] !== undefined ? Effect.succeed(exits[i]!) : Effect.exit(settleAfterSweep(item)))
      : Effect.succeed(exits as ReadonlyArray<Exit.Exit<Receipt>>)
  }

  /**
   * A settlement that failed on its own: a logged defect of that call alone (an outage is logged
   * once, by DatabaseStatus, when Billing keeps the settlement in the journal); its hold stays.
   */
  const failedAlone = (item: SettleItem, cause: Cause.Cause<unknown>) =>
    Effect.as(
      isDatabaseOutage(cause) ? Effect.void : Effect.logError(
        "a settlement failed; its reservation stays open until the sweeper releases it",
        cause
      ).pipe(Effect.annotateLogs({ account: item.reservation.accountId, reservation: item.reservation.id })),
      Exit.die(Cause.squash(cause)) as Exit.Exit<Receipt>
    )

  /**
   * One account's settlements: bills that cannot be written are refused first (a logged defect
   * each, never reaching SQL), the rest settled together.
   */
  const settleBatch = (accountId: string, items: ReadonlyArray<SettleItem>) =>
    Effect.gen(function*() {
      const exits = new Map<SettleItem, Exit.Exit<Receipt>>()
      for (const item of items) {
        const problem = billProblem(item.bill)
        if (problem === undefined) continue
        const defect = refusedBill(item.reservation.id, problem)
        yield* Effect.logError(defect.message).pipe(Effect.annotateLogs({ account: accountId }))
        exits.set(item, Exit.die(defect))
      }
      const writable = items.filter((item) => !exits.has(item))
      const settled = writable.length > 0 ? yield* settleWritable(accountId, writable) : []
      writable.forEach((item, i) => exits.set(item, settled[i]!))
      return items.map((item) => exits.get(item)!)
    })

  return {
    settleBatch,
    settlementInput,
    answerRows,
    /** Whether every bill can be written (none would be refused by `settleBatch`). */
    allWritable: (items: ReadonlyArray<SettleItem>) => items.every((item) => billProblem(item.bill) === undefined)
  }
}
