/**
 * Log pages over events read from receipts (`BENCH_ONLY=monitoring`, after the table of
 * bench/monitoring.ts): one account whose calls each left a receipt as the gateway writes them
 * (`event_seq`, its route and class in `call_events`) and, as an account that reserves call by
 * call does, a stored `payment.reserved`; then the latency of a page (100 events) unfiltered and
 * by the filters that once read every receipt or every stored event of a category
 * (docs/performance.md, items 57–62). A second account has only receipts without call events
 * (embeddings calls): a filter by a call event's category reads all of them.
 */
import type { TestGateway } from "../test/support/gateway.ts"
import { timed } from "./monitoring.ts"

/**
 * The transaction a call's rows were written in: the ids below the seeding's own, spread over the
 * calls in order (so every row is below the log's horizon, and a transaction holds a few calls, as
 * the gateway's settlements do). One transaction for all would make every receipt one group of the
 * log's order, which no gateway writes.
 */
const CALL_XID = "(3 + i::bigint * (pg_current_xact_id()::text::bigint - 10) / $2)::text::xid8"

const FILTERS = ["", "payment.settled", "payment.reserved", "provider.route", "privacy."]

/** `count` receipts of `accountId` as the gateway writes them, with their reservations; `withCalls`: chat calls'. */
const seedReceipts = async (gateway: TestGateway, accountId: string, count: number, withCalls: boolean) => {
  const batch = 50_000
  for (let start = 0; start < count; start += batch) {
    const range = [accountId, count, start, Math.min(count, start + batch) - 1]
    await gateway.query(
      `INSERT INTO reservations (id, account_id, request_id, amount_usd, status, created_at, expires_at, closed_at)
       SELECT $1 || '_r' || i, $1, $1 || '_q' || i, 0.001, 'settled', now() - make_interval(secs => $2 - i), now(), now()
       FROM generate_series($3::int, $4::int) AS i`,
      range
    )
    await gateway.query(
      `INSERT INTO receipts (id, account_id, request_id, endpoint, model, tier, privacy_class, input_tokens, output_tokens,
                             input_per_mtok_usd, output_per_mtok_usd, upstream_usd, margin_usd, total_usd, estimated_usd,
                             reserved_at, balance_after_usd, attempts, provider_id, leased, event_seq, call_events,
                             settled_at, created_at, xid)
       SELECT $1 || '_r' || i, $1, $1 || '_q' || i, '/v1/chat/completions', 'svc/bench', 'pro', 'standard_route', 10, 20,
              1, 2, 0.0005, 0.0005, 0.001, 0.001, now() - make_interval(secs => $2 - i), 1, '[]', 'sandbox', false,
              nextval('event_positions'),
              ${withCalls ? `'[{"type":"provider.route","data":{"model":"svc/bench","attempt":1}},{"type":"privacy.class_served","data":{"class":"standard_route"}}]'` : "NULL"}::jsonb,
              now() - make_interval(secs => $2 - i), now() - make_interval(secs => $2 - i),
              ${CALL_XID}
       FROM generate_series($3::int, $4::int) AS i`,
      range
    )
    await gateway.query(
      `INSERT INTO events (id, type, account_id, request_id, receipt_id, data, created_at, xid)
       SELECT $1 || '_e' || i, 'payment.reserved', $1, $1 || '_q' || i, $1 || '_r' || i, '{"amount_usd":"0.001000000"}',
              now() - make_interval(secs => $2 - i), ${CALL_XID}
       FROM generate_series($3::int, $4::int) AS i`,
      range
    )
  }
}

/** The table's rows for one database: each filter's page over chat receipts, then over embeddings receipts. */
export const derivedLogRows = async (gateway: TestGateway, label: string, count: number) => {
  const chat = await gateway.account({ credit: "1", scopes: ["monitoring"] })
  const embeddings = await gateway.account({ credit: "1", scopes: ["monitoring"] })
  await seedReceipts(gateway, chat.id, count, true)
  await seedReceipts(gateway, embeddings.id, count, false)
  await gateway.query("ANALYZE")
  const row = async (account: { readonly key: string }, kind: string) => {
    const cells: Array<string> = []
    for (const type of FILTERS) {
      const page = () => gateway.request("GET", `/v1/logs?limit=100${type === "" ? "" : `&type=${type}`}`, { key: account.key })
      // A page that is not full would time the wrong thing: embeddings calls have no routing or privacy events.
      const listed = ((await page()).body as { readonly data?: ReadonlyArray<unknown> }).data?.length
      const expected = kind === "embeddings" && (type.startsWith("provider") || type.startsWith("privacy")) ? 0 : 100
      if (listed !== expected) throw new Error(`${kind} ${type || "log"}: a page of ${listed} events, not ${expected}`)
      cells.push(await timed(page))
    }
    return `| ${label} | ${kind} | ${cells.join(" | ")} |`
  }
  return [await row(chat, "chat"), await row(embeddings, "embeddings")]
}

export const derivedLogHeader = (count: number) => [
  "",
  `Log pages over ${count.toLocaleString("en")} receipts of one account (their settlement events read from them) and one stored \`payment.reserved\` each, p50 / p95 ms:`,
  `| database | calls | ${FILTERS.map((type) => (type === "" ? "no filter" : type)).join(" | ")} |`,
  `|---|---|${FILTERS.map(() => "---").join("|")}|`
]
