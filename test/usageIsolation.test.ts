/**
 * One account, 300 concurrent calls through the real server, JSON and
 * streamed mixed, against an upstream that reports impossible usage for some
 * (negative, past 2³¹, not a number, fractional), none for some, and more
 * output than was held for some. Their settlements share batch statements,
 * yet nobody else is touched: every call is 200 with exactly one receipt,
 * each at its rule, and the receipts add up to the balance drop (the money
 * invariants run after the test). Runs on PGlite, and on PostgreSQL with
 * DATABASE_URL.
 */
import { describe, expect, it } from "vitest"
import { billedSuite } from "./support/billedSuite.ts"
import { heldForCalls } from "./support/invariants.ts"
import { meteredConfig } from "./support/meteredConfig.ts"
import { parseUsd } from "../services/Money.ts"

const suite = billedSuite((baseUrl) => meteredConfig(baseUrl))

const usdNanos = (text: string): bigint => {
  const parsed = parseUsd(text)
  if (parsed._tag === "None") throw new Error(`not an amount: ${text}`)
  return parsed.value
}

const MAX_TOKENS = 50

/** What the upstream reports for a call of each kind (the kind is named in the prompt). */
const REPORTS: Record<string, ((honest: Record<string, any>) => unknown) | undefined> = {
  honest: (honest) => honest,
  negative: (honest) => ({ ...honest, prompt_tokens: -40 }),
  huge: (honest) => ({ ...honest, completion_tokens: 2 ** 31 }),
  text: (honest) => ({ ...honest, completion_tokens: "NaN" }),
  fraction: (honest) => ({ ...honest, prompt_tokens: 1.5 }),
  missing: () => undefined,
  over: (honest) => ({ ...honest, completion_tokens: 5000 })
}
const KINDS = ["honest", "negative", "honest", "huge", "honest", "text", "honest", "fraction", "missing", "over"]
const INVALID = new Set(["negative", "huge", "text", "fraction"])

interface ReceiptRow {
  readonly id: string
  readonly input_tokens: number
  readonly output_tokens: number
  readonly total_usd: string
}

describe("settlement isolation", () => {
  it("an upstream with bad usage among 300 concurrent calls of one account leaves the others untouched", async () => {
    const account = await suite.gateway.account({ credit: "10" })
    suite.upstream.behave({
      usage: (body, honest) => {
        const kind = String(body.messages.at(-1).content).split(" ")[0]!
        return REPORTS[kind]!(honest)
      }
    })
    const calls = Array.from({ length: 300 }, (_, i) => ({ kind: KINDS[i % KINDS.length]!, streamed: i % 3 === 1, i }))
    const responses = await Promise.all(calls.map(({ i, kind, streamed }) =>
      suite.gateway.request("POST", "/v1/chat/completions", {
        key: account.key,
        body: {
          model: "svc/metered",
          max_tokens: MAX_TOKENS,
          messages: [{ role: "user", content: `${kind} call number ${i}` }],
          ...(streamed ? { stream: true } : {})
        }
      })
    ))
    expect(responses.map((response) => response.status)).toEqual(calls.map(() => 200))
    calls.forEach(({ streamed }, i) => {
      if (streamed) expect(responses[i]!.text.trimEnd().endsWith("data: [DONE]")).toBe(true)
    })
    const receiptIds = responses.map((response) => response.headers.get("x-svc-receipt-id")!)
    expect(new Set(receiptIds).size).toBe(300)

    const rows = await suite.gateway.query<ReceiptRow>(
      "SELECT id, input_tokens, output_tokens, total_usd::text FROM receipts WHERE account_id = $1",
      [account.id]
    )
    expect(rows).toHaveLength(300)
    const byId = new Map(rows.map((row) => [row.id, row]))
    calls.forEach(({ i, kind }) => {
      const receipt = byId.get(receiptIds[i]!)!
      // The fake counts a prompt's words plus one, and answers with the prompt's words.
      if (kind === "honest") expect([receipt.input_tokens, receipt.output_tokens]).toEqual([5, 4])
      if (INVALID.has(kind)) expect(receipt.output_tokens).toBe(MAX_TOKENS)
      if (kind === "missing") expect(receipt.output_tokens).toBeLessThan(MAX_TOKENS)
      if (kind === "over") expect(receipt.output_tokens).toBe(5000)
    })
    // A JSON caller is told the usage billed, never the impossible figures.
    calls.forEach(({ i, kind, streamed }) => {
      if (!streamed && INVALID.has(kind)) expect(responses[i]!.body.usage.completion_tokens).toBe(MAX_TOKENS)
    })

    const events = await suite.gateway.query<{ type: string; receipt_id: string }>(
      "SELECT type, receipt_id FROM events WHERE account_id = $1 AND type IN ('provider.usage_invalid', 'payment.overage')",
      [account.id]
    )
    const receiptsWith = (type: string) => events.filter((event) => event.type === type).map((event) => event.receipt_id).sort()
    const receiptsOf = (wanted: (kind: string) => boolean) =>
      calls.filter(({ kind }) => wanted(kind)).map(({ i }) => receiptIds[i]!).sort()
    expect(receiptsWith("provider.usage_invalid")).toEqual(receiptsOf((kind) => INVALID.has(kind)))
    expect(receiptsWith("payment.overage")).toEqual(receiptsOf((kind) => kind === "over"))

    const [balance] = await suite.gateway.query<{ balance: string }>(
      "SELECT balance_usd::text AS balance FROM accounts WHERE id = $1",
      [account.id]
    )
    expect(await heldForCalls(suite.gateway.query, account.id)).toBe("0.000000000")
    const charged = rows.reduce((sum, row) => sum + usdNanos(row.total_usd), 0n)
    expect(usdNanos("10") - usdNanos(balance!.balance)).toBe(charged)
  }, 120_000)
})
