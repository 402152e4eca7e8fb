/**
 * Database faults under load, on a real PostgreSQL server seen through a
 * fault-injecting proxy (test/support/faultProxy.ts; the shared server itself
 * is never touched): the database stopped mid-stream → every delivered
 * answer is billed exactly once when it is back (Σ receipts = balance drop,
 * every hold ended once); requests during the outage → 503 with Retry-After
 * and no upstream call; a credit lease's take that ran but whose answer was
 * lost → given back; a frozen database → a bounded wait; a gateway
 * restarted with a pending journal → replayed. PGlite runs skip these (an
 * embedded database cannot be stopped apart from the process); the journal's
 * logic is covered there by test/settlementJournal.test.ts.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import pg from "pg"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type FakeOpenAi, startFakeOpenAi } from "./support/fakeOpenAiUpstream.ts"
import { freshDatabase, type TestDatabase } from "./support/database.ts"
import { type FaultProxy, startFaultProxy } from "./support/faultProxy.ts"
import { startGateway, type TestGateway } from "./support/gateway.ts"
import { heldForCalls, moneyViolations } from "./support/invariants.ts"
import { meteredConfig } from "./support/meteredConfig.ts"

const SERVER = process.env.DATABASE_URL

const configFor = (baseUrl: string) => ({
  database: { connectTimeoutMs: 1000, statementTimeoutMs: 2000, probeIntervalMs: 200, retryAfterSeconds: 3 },
  ...meteredConfig(baseUrl)
})

const PROMPT = "one two three four five six seven eight nine ten eleven twelve"

const sleep = (ms: number) => new Promise<void>((wake) => setTimeout(wake, ms))

/** Waits until `check` holds, polling; fails after `ms`. */
const eventually = async (check: () => Promise<boolean>, ms: number, what: string) => {
  const until = performance.now() + ms
  while (!(await check().catch(() => false))) {
    if (performance.now() > until) throw new Error(`timed out waiting for ${what}`)
    await sleep(100)
  }
}

/** SQL straight to the test database on the server, around the proxy. */
const direct = (url: string) => async <Row = Record<string, unknown>>(text: string, params: ReadonlyArray<unknown> = []) => {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    return (await client.query(text, params as Array<unknown>)).rows as ReadonlyArray<Row>
  } finally {
    await client.end()
  }
}

interface Rig {
  readonly proxy: FaultProxy
  readonly upstream: FakeOpenAi
  readonly database: TestDatabase
  readonly dataDir: string
  readonly query: ReturnType<typeof direct>
  readonly start: () => Promise<TestGateway>
}

/** A fresh database, a proxy in front of it, a fake upstream and a data directory; gateways start on them. */
const makeRig = async (): Promise<Rig> => {
  const database = await freshDatabase()
  const url = new URL(database.env.DATABASE_URL!)
  const proxy = await startFaultProxy({ host: url.hostname, port: Number(url.port || 5432) })
  const proxied = new URL(url)
  proxied.port = String(proxy.port)
  const upstream = await startFakeOpenAi()
  const dataDir = mkdtempSync(join(tmpdir(), "svc-outage-data-"))
  return {
    proxy,
    upstream,
    database,
    dataDir,
    query: direct(url.toString()),
    start: () =>
      startGateway({
        config: configFor(upstream.baseUrl),
        env: { SVC_DATA_DIR: dataDir },
        database: { env: { DATABASE_URL: proxied.toString() }, drop: async () => {} }
      })
  }
}

const closeRig = async (rig: Rig | undefined) => {
  await rig?.proxy.close()
  await rig?.upstream.close()
  await rig?.database.drop()
  if (rig !== undefined) rmSync(rig.dataDir, { recursive: true, force: true })
}

const chat = (gateway: TestGateway, key: string, stream: boolean) =>
  fetch(`${gateway.url}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "svc/metered", stream, messages: [{ role: "user", content: PROMPT }] })
  })

const nanos = (usd: string) => BigInt(usd.replace(".", ""))

/** Every hold ended once with one receipt each for `receiptIds`, and the account's money adds up. */
const expectBilledOnce = async (rig: Rig, accountId: string, credit: string, receiptIds: ReadonlyArray<string>) => {
  const receipts = await rig.query<{ id: string; total_usd: string }>(
    "SELECT id, total_usd::text FROM receipts WHERE account_id = $1",
    [accountId]
  )
  expect(receipts.map((row) => row.id).sort()).toEqual([...receiptIds].sort())
  const [account] = await rig.query<{ balance_usd: string; reserved_usd: string }>(
    "SELECT balance_usd::text, reserved_usd::text FROM accounts WHERE id = $1",
    [accountId]
  )
  const charged = receipts.reduce((sum, row) => sum + nanos(row.total_usd), 0n)
  expect(charged).toBeGreaterThan(0n)
  expect(nanos(credit + ".000000000") - nanos(account!.balance_usd)).toBe(charged)
  expect(await heldForCalls(rig.query, accountId)).toBe("0.000000000")
  const open = await rig.query("SELECT id FROM reservations WHERE account_id = $1 AND status <> 'settled'", [accountId])
  expect(open).toEqual([])
  expect(await moneyViolations(rig.query)).toEqual([])
}

describe.skipIf(SERVER === undefined || SERVER === "")(
  "database outages (PostgreSQL server runs only: an embedded PGlite cannot be stopped apart from its process)",
  () => {
    let current: Rig | undefined
    let gateway: TestGateway | undefined
    beforeAll(async () => {
      current = await makeRig()
      gateway = await current.start()
    }, 60_000)
    afterAll(async () => {
      current?.proxy.restart()
      await gateway?.close()
      await closeRig(current)
    }, 60_000)

    it("stopped mid-call: every delivered stream and answered JSON call is billed once when it is back; meanwhile 503 and no upstream call", async () => {
      const rig = current!
      const account = await gateway!.account({ credit: "10" })
      rig.upstream.behave({ chunkDelayMs: 80, delayHeadersMs: 300 })
      const streams = Array.from({ length: 8 }, () =>
        chat(gateway!, account.key, true).then(async (response) => ({
          status: response.status,
          receiptId: response.headers.get("x-svc-receipt-id"),
          text: await response.text()
        })))
      const calls = Array.from({ length: 4 }, () =>
        chat(gateway!, account.key, false).then(async (response) => ({
          status: response.status,
          receiptId: response.headers.get("x-svc-receipt-id"),
          pending: response.headers.get("x-svc-receipt-pending"),
          body: await response.json() as any
        })))
      // Every call has its hold and is at the upstream: then the database goes away.
      await eventually(async () => rig.upstream.requests.length === 12, 10_000, "12 upstream calls")
      rig.proxy.stop()

      const streamed = await Promise.all(streams)
      for (const stream of streamed) {
        expect(stream.status).toBe(200)
        expect(stream.receiptId).toMatch(/^rcpt_/)
        expect(stream.text).toContain("twelve")
        expect(stream.text.trim().endsWith("data: [DONE]")).toBe(true)
      }
      const answered = await Promise.all(calls)
      for (const call of answered) {
        expect(call.status).toBe(200)
        expect(call.receiptId).toMatch(/^rcpt_/)
        // "true" when the gateway knew the database was away as it answered; a settlement queued before it
        // knew goes to the journal when its write fails.
        expect([null, "true"]).toContain(call.pending)
        expect(call.body.choices[0].message.content).toBe(PROMPT)
      }
      // Kept on disk while the database is away.
      const journal = join(rig.dataDir, "journal")
      const keptLines = () => readdirSync(journal).flatMap((name) => readFileSync(join(journal, name), "utf8").split("\n").filter(Boolean))
      await eventually(async () => keptLines().length >= 4, 10_000, "4 settlements kept")

      const sent = rig.upstream.requests.length
      const refused = await Promise.all(Array.from({ length: 5 }, async () => {
        const response = await chat(gateway!, account.key, false)
        return { status: response.status, retryAfter: response.headers.get("retry-after"), body: await response.json() as any }
      }))
      for (const response of refused) {
        expect(response).toMatchObject({ status: 503, retryAfter: "3", body: { error: { code: "service_unavailable" } } })
      }
      expect(rig.upstream.requests.length).toBe(sent)

      rig.proxy.restart()
      const ids = [...streamed, ...answered].map((call) => call.receiptId!)
      await eventually(async () => (await rig.query("SELECT 1 FROM receipts WHERE account_id = $1", [account.id])).length === 12, 20_000, "12 receipts")
      await expectBilledOnce(rig, account.id, "10", ids)
      // Twelve calls at once made the account busy: its credit lease, given back while the database was away, goes back now.
      await eventually(
        async () => (await rig.query("SELECT 1 FROM credit_leases WHERE account_id = $1", [account.id])).length === 0,
        5000,
        "the credit lease given back"
      )
      // The journal is empty again, and the gateway serves.
      await eventually(async () => readdirSync(journal).every((name) => readFileSync(join(journal, name), "utf8") === ""), 5000, "an empty journal")
      rig.upstream.behave({})
      expect((await chat(gateway!, account.key, false)).status).toBe(200)
    }, 60_000)

    it("a credit lease whose take ran but whose answer was lost goes back when the database is back", async () => {
      const rig = current!
      const account = await gateway!.account({ credit: "10" })
      rig.upstream.behave({ delayHeadersMs: 300 })
      const taken = rig.proxy.stopAfter("INSERT INTO credit_leases")
      // Sixteen calls at once: at least eight reserve on their own within one lease sweep, and the account's take is sent.
      const calls = Array.from({ length: 16 }, () =>
        chat(gateway!, account.key, false).then(async (response) => ({
          status: response.status,
          receiptId: response.headers.get("x-svc-receipt-id")
        })))
      await taken
      expect(await rig.query("SELECT 1 FROM credit_leases WHERE account_id = $1", [account.id])).toHaveLength(1)
      const answered = await Promise.all(calls)
      // A call whose reservation waited behind the take in the account's turn meets the outage.
      for (const call of answered) expect([200, 503]).toContain(call.status)
      const ids = answered.flatMap((call) => call.status === 200 ? [call.receiptId!] : [])
      expect(ids.length).toBeGreaterThanOrEqual(8)

      rig.proxy.restart()
      await eventually(
        async () => (await rig.query("SELECT 1 FROM receipts WHERE account_id = $1", [account.id])).length === ids.length,
        20_000,
        `${ids.length} receipts`
      )
      await eventually(
        async () => (await rig.query("SELECT 1 FROM credit_leases WHERE account_id = $1", [account.id])).length === 0,
        5000,
        "the lost take's lease given back"
      )
      await expectBilledOnce(rig, account.id, "10", ids)
      rig.upstream.behave({})
      await eventually(async () => (await chat(gateway!, account.key, false)).status === 200, 20_000, "service again")
    }, 60_000)

    it("a call held from a credit lease that fails while the database is away ends on its lease: the lease goes back when it is back", async () => {
      const rig = current!
      const account = await gateway!.account({ credit: "10" })
      rig.upstream.behave({ delayHeadersMs: 200 })
      // Sixteen calls at once: the account is busy, and its next call is held from a lease, with no statement.
      await Promise.all(Array.from({ length: 16 }, () => chat(gateway!, account.key, false).then((response) => response.text())))
      await eventually(
        async () => (await rig.query("SELECT 1 FROM credit_leases WHERE account_id = $1", [account.id])).length === 1,
        5000,
        "the account's credit lease"
      )
      rig.upstream.behave({ status: 500, delayHeadersMs: 300 })
      const sent = rig.upstream.requests.length
      const failing = chat(gateway!, account.key, false)
      await eventually(async () => rig.upstream.requests.length > sent, 5000, "the call at the upstream")
      rig.proxy.stop()
      // Its release cannot write the call's rows now; the call still ends, and its credit goes back to the lease.
      expect((await failing).status).toBeGreaterThanOrEqual(500)
      rig.proxy.restart()
      rig.upstream.behave({})
      await eventually(
        async () => (await rig.query("SELECT 1 FROM credit_leases WHERE account_id = $1", [account.id])).length === 0,
        8000,
        "the lease given back"
      )
      expect(await heldForCalls(rig.query, account.id)).toBe("0.000000000")
      expect(await moneyViolations(rig.query)).toEqual([])
    }, 60_000)

    it("frozen: a request waits a bounded time and gets 503 while the freeze goes on; nothing upstream", async () => {
      const rig = current!
      const account = await gateway!.account({ credit: "1" })
      rig.upstream.behave({})
      const sent = rig.upstream.requests.length
      rig.proxy.freeze()
      try {
        const response = await chat(gateway!, account.key, false)
        expect(response.status).toBe(503)
        expect(response.headers.get("retry-after")).toBe("3")
        expect(rig.upstream.requests.length).toBe(sent)
      } finally {
        rig.proxy.restart()
      }
      await eventually(async () => (await chat(gateway!, account.key, false)).status === 200, 20_000, "service after the freeze")
    }, 60_000)
  }
)

describe.skipIf(SERVER === undefined || SERVER === "")(
  "a pending journal at start (PostgreSQL server runs only: PGlite runs cover replay in settlementJournal.test.ts)",
  () => {
    let current: Rig | undefined
    afterAll(() => closeRig(current), 60_000)

    it("a gateway stopped with settlements kept replays them when it starts again", async () => {
      const rig = current = await makeRig()
      const first = await rig.start()
      const account = await first.account({ credit: "5" })
      rig.upstream.behave({ delayHeadersMs: 500 })
      const calls = Array.from({ length: 3 }, () => chat(first, account.key, false))
      await eventually(async () => rig.upstream.requests.length === 3, 10_000, "3 upstream calls")
      rig.proxy.stop()
      const answered = await Promise.all(calls.map(async (call) => {
        const response = await call
        return { status: response.status, receiptId: response.headers.get("x-svc-receipt-id")! }
      }))
      expect(answered.map((call) => call.status)).toEqual([200, 200, 200])
      await first.close()
      // Still nothing in the database.
      expect(await rig.query("SELECT id FROM receipts WHERE account_id = $1", [account.id])).toEqual([])

      rig.proxy.restart()
      const second = await rig.start()
      try {
        await expectBilledOnce(rig, account.id, "5", answered.map((call) => call.receiptId))
      } finally {
        await second.close()
      }
    }, 60_000)
  }
)

