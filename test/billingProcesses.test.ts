/**
 * Billing across real gateway processes (`node --import tsx src/main.ts`), not one
 * in-process server: several processes racing for one account's credit on
 * one PostgreSQL database, and a process SIGKILLed with calls in flight whose
 * reservations the next process's sweeper must free. The money invariants are
 * checked in SQL straight on the database.
 */
import { randomBytes } from "node:crypto"
import { existsSync } from "node:fs"
import { join } from "node:path"
import { PGlite } from "@electric-sql/pglite"
import pg from "pg"
import { Agent, request } from "undici"
import { afterAll, describe, expect, it } from "vitest"
import { freshDatabase, type TestDatabase } from "./support/database.ts"
import { type FakeOpenAi, startFakeOpenAi } from "./support/fakeOpenAiUpstream.ts"
import { type GatewayProcess, startGatewayProcess, stopAllGatewayProcesses } from "./support/gatewayProcess.ts"
import { moneyViolations } from "./support/invariants.ts"

const onPostgres = Boolean(process.env.DATABASE_URL)

type Query = <Row = Record<string, unknown>>(text: string, params?: ReadonlyArray<unknown>) => Promise<ReadonlyArray<Row>>

const databases: Array<TestDatabase> = []
const clients: Array<pg.Client> = []
let upstream: FakeOpenAi | undefined

afterAll(async () => {
  await stopAllGatewayProcesses()
  await Promise.allSettled(clients.map((client) => client.end()))
  await upstream?.close()
  await Promise.allSettled(databases.map((database) => database.drop()))
})

const newDatabase = async () => {
  const database = await freshDatabase()
  databases.push(database)
  return database
}

/** A direct connection to a PostgreSQL test database (closed in `afterAll`). */
const connect = async (database: TestDatabase): Promise<Query> => {
  const client = new pg.Client({ connectionString: database.env.DATABASE_URL })
  clients.push(client)
  await client.connect()
  return async (text, params = []) => (await client.query(text, [...params])).rows
}

/** Runs `use` on the embedded database in `dataDir`, opened here while no gateway holds it. */
const withPglite = async <A>(dataDir: string, use: (query: Query) => Promise<A>): Promise<A> => {
  const db = await PGlite.create(dataDir)
  try {
    return await use(async (text, params = []) => (await db.query<any>(text, [...params])).rows)
  } finally {
    await db.close()
  }
}

const adminKey = () => `admin_${randomBytes(16).toString("hex")}`

/** Exact USD decimal strings as integer nano-dollars. */
const nanos = (usd: string) => {
  const [whole, fraction = ""] = usd.split(".")
  return BigInt(whole!) * 1_000_000_000n + BigInt(fraction.padEnd(9, "0").slice(0, 9))
}
const usd = (value: bigint) => `${value / 1_000_000_000n}.${(value % 1_000_000_000n).toString().padStart(9, "0")}`

const sleep = (ms: number) => new Promise<void>((wake) => setTimeout(wake, ms))

const json = async (url: string, method: string, key: string, body?: unknown) => {
  const response = await fetch(url, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    signal: AbortSignal.timeout(30_000)
  })
  const text = await response.text()
  if (response.status >= 300) throw new Error(`${method} ${url}: ${response.status} ${text}`)
  return JSON.parse(text)
}

/** An account with `credit` and a chat key, made through the operator API. */
const makeAccount = async (gateway: GatewayProcess, admin: string, credit: string) => {
  const account = await json(`${gateway.url}/v1/admin/accounts`, "POST", admin, { name: "processes", credit_usd: credit })
  const key = await json(`${gateway.url}/v1/admin/accounts/${account.id}/keys`, "POST", admin, { scopes: ["chat"] })
  return { id: account.id as string, key: key.key as string }
}

const accountOf = (gateway: GatewayProcess, admin: string, id: string) =>
  json(`${gateway.url}/v1/admin/accounts/${id}`, "GET", admin) as Promise<
    { balance_usd: string; reserved_usd: string; available_usd: string }
  >

/** Polls `check` until it returns a value (not undefined) or `ms` pass; then the last value it saw is reported. */
const waitFor = async <A>(what: string, ms: number, check: () => Promise<A | undefined>): Promise<A> => {
  const deadline = Date.now() + ms
  while (true) {
    const value = await check()
    if (value !== undefined) return value
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`)
    await sleep(100)
  }
}

/** A read through each process: it waits for the settlements of the calls that process answered (Billing.settled). */
const settledIn = (gateways: ReadonlyArray<{ readonly url: string }>, key: string) =>
  Promise.all(gateways.map(async (gateway) =>
    (await fetch(`${gateway.url}/v1/models`, { headers: { authorization: `Bearer ${key}` } })).arrayBuffer()
  ))

describe("billing across gateway processes", () => {
  // Credit for a tenth of the calls, and for two thirds of them: then each process holds the account's next
  // calls from a credit lease (layers/billing/creditLeases.ts) until the balance's end is near.
  for (const [calls, creditCalls] of [[1000, 100], [1500, 1000]] as const) {
  it.skipIf(!onPostgres)(
    onPostgres
      ? `three processes on one PostgreSQL database never overspend an account under ${calls} concurrent calls (credit for ${creditCalls})`
      : "three processes on one database never overspend (skipped: needs DATABASE_URL — PGlite serves one process only)",
    async () => {
      const database = await newDatabase()
      const query = await connect(database)
      const admin = adminKey()
      const config = { providers: [{ id: "sandbox", plugin: "sandbox", deployments: [{ model: "svc/pro" }] }] }
      const start = () => startGatewayProcess({ env: { ...database.env, SVC_ADMIN_KEY: admin }, config })
      // All three start together on the empty database: migrations must serialise themselves.
      const gateways = await Promise.all([start(), start(), start()])
      const body = JSON.stringify({ model: "svc/pro", max_tokens: 8, messages: [{ role: "user", content: "bill me across processes" }] })

      // One call on an account of its own tells the estimate of this exact request.
      const probe = await makeAccount(gateways[0]!, admin, "1")
      const probed = await fetch(`${gateways[0]!.url}/v1/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${probe.key}`, "content-type": "application/json" },
        body
      })
      expect(probed.status, await probed.clone().text()).toBe(200)
      await probed.arrayBuffer()
      // Asked of another process at once, the receipt is there: it waits while the call's reservation is open.
      const receipt = await fetch(`${gateways[2]!.url}/v1/receipts/${probed.headers.get("x-svc-receipt-id")}`, {
        headers: { authorization: `Bearer ${admin}` }
      })
      expect(receipt.status, await receipt.clone().text()).toBe(200)
      await receipt.arrayBuffer()
      await settledIn([gateways[0]!], probe.key)
      // The sandbox's answer runs past 8 tokens, so a call costs about its estimate.
      const [{ estimated_usd, total_usd }] = await query<{ estimated_usd: string; total_usd: string }>(
        "SELECT estimated_usd::text, total_usd::text FROM receipts WHERE account_id = $1",
        [probe.id]
      ) as any
      const estimate = nanos(estimated_usd)
      expect(estimate).toBeGreaterThan(0n)

      const credit = estimate * BigInt(creditCalls)
      const account = await makeAccount(gateways[1]!, admin, usd(credit))

      // At most ~200 calls in flight at once, round-robin over the three processes.
      const agent = new Agent({ connections: 67, pipelining: 1, keepAliveTimeout: 10_000 })
      const started = Date.now()
      const statuses = await Promise.all(
        Array.from({ length: calls }, async (_, i) => {
          const gateway = gateways[i % gateways.length]!
          const response = await request(`${gateway.url}/v1/chat/completions`, {
            method: "POST",
            dispatcher: agent,
            headers: { authorization: `Bearer ${account.key}`, "content-type": "application/json" },
            body,
            signal: AbortSignal.timeout(120_000)
          })
          const text = await response.body.text()
          return { status: response.statusCode, gateway: i % gateways.length, text }
        })
      )
      const elapsed = Date.now() - started
      await agent.close()
      await settledIn(gateways, account.key)

      const count = (status: number) => statuses.filter((call) => call.status === status).length
      const ok = count(200)
      const refused = count(402)
      const unexpected = statuses.filter((call) => call.status !== 200 && call.status !== 402)
      console.log(
        `${calls} calls over 3 processes in ${elapsed} ms: ${ok} × 200, ${refused} × 402, ${unexpected.length} other;` +
          ` estimate ${usd(estimate)} USD, cost ${total_usd} USD, credit ${usd(credit)} USD; charged per process: ${
            [0, 1, 2].map((index) => statuses.filter((call) => call.gateway === index && call.status === 200).length)
              .join(" / ")
          }`
      )
      expect(unexpected.map((call) => `${call.status} from process ${call.gateway}: ${call.text.slice(0, 300)}`)).toEqual([])
      expect(ok).toBeGreaterThan(0)
      expect(refused).toBeGreaterThan(0)

      const [receipts] = await query<{ n: number; spent: string }>(
        "SELECT count(*)::int AS n, coalesce(sum(total_usd), 0)::text AS spent FROM receipts WHERE account_id = $1",
        [account.id]
      )
      expect(receipts!.n).toBe(ok)
      expect(nanos(receipts!.spent)).toBeLessThanOrEqual(credit)
      const reservations = await query<{ status: string; n: number; least: string; most: string }>(
        `SELECT status, count(*)::int AS n, min(amount_usd)::text AS least, max(amount_usd)::text AS most
         FROM reservations WHERE account_id = $1 GROUP BY status`,
        [account.id]
      )
      // Each admitted call reserved exactly the probed estimate and was settled; refused ones left no reservation.
      expect(reservations).toEqual([{ status: "settled", n: ok, least: usd(estimate), most: usd(estimate) }])
      if (creditCalls >= 1000) {
        // Calls held from a credit lease got their row with their settlement: it expires as it closes.
        const [{ leased }] = await query<{ leased: number }>(
          "SELECT count(*)::int AS leased FROM reservations WHERE account_id = $1 AND expires_at = closed_at",
          [account.id]
        ) as any
        expect(leased).toBeGreaterThan(0)
      }
      expect(await moneyViolations(query)).toEqual([])
      // A process's credit lease goes back once the account has been idle for a second or two.
      const row = await waitFor("the credit leases given back", 10_000, async () => {
        const [now] = await query<{ balance: string; reserved: string }>(
          "SELECT balance_usd::text AS balance, reserved_usd::text AS reserved FROM accounts WHERE id = $1",
          [account.id]
        )
        return now!.reserved === "0.000000000" ? now : undefined
      })
      expect(nanos(row.balance)).toBe(credit - nanos(receipts!.spent))
      expect(nanos(row.balance)).toBeGreaterThanOrEqual(0n)
      expect(await query("SELECT id FROM credit_leases WHERE account_id = $1", [account.id])).toEqual([])
      expect(await moneyViolations(query)).toEqual([])

      await Promise.all(gateways.map((gateway) => gateway.stop()))
    },
    240_000
  )
  }

  it(
    `frees the reservations of a process SIGKILLed mid-call once another process starts (${onPostgres ? "PostgreSQL" : "PGlite"})`,
    async () => {
      const fake = await startFakeOpenAi()
      upstream = fake
      const database = await newDatabase()
      const admin = adminKey()
      const lease = 2
      const config = (sweepIntervalSeconds: number) => ({
        billing: { reservationLeaseSeconds: lease, sweepIntervalSeconds },
        models: [{
          id: "svc/slow",
          context: 32000,
          pricing: { input: "1.00", output: "2.00" },
          modalities: ["text"],
          capabilities: ["chat", "streaming"]
        }],
        providers: [{
          id: "slow",
          plugin: "openai-compatible",
          baseUrl: fake.baseUrl,
          timeoutMs: 60_000,
          deployments: [{ model: "svc/slow", upstreamModel: "m", cost: { input: "0.50", output: "1.00" } }]
        }]
      })
      const env = { ...database.env, SVC_ADMIN_KEY: admin }
      const direct = onPostgres ? await connect(database) : undefined
      /** On PGlite only while no gateway runs. */
      const onDatabase = <A>(use: (query: Query) => Promise<A>) =>
        direct !== undefined ? use(direct) : withPglite(database.env.SVC_DATA_DIR!, use)

      // The process that dies sweeps only at start: its own sweeper must not free the calls' reservations
      // (their 2 s lease runs out while they stream) before the kill, or the test would depend on timing.
      const first = await startGatewayProcess({ env, config: config(3600) })
      const credit = "1.000000000"
      const account = await makeAccount(first, admin, credit)
      // A first call on another account, so that the calls below meet a warm process.
      const warm = await makeAccount(first, admin, "1")
      fake.behaveOnce({})
      await json(`${first.url}/v1/chat/completions`, "POST", warm.key, {
        model: "svc/slow",
        messages: [{ role: "user", content: "warm up" }]
      })

      // Slow streams: 40 words at half a second per frame would take some 20 s.
      fake.behave({ chunkDelayMs: 500 })
      const words = Array.from({ length: 40 }, (_, i) => `word${i}`).join(" ")
      const inFlight = 10
      const controller = new AbortController()
      const sentAt = Date.now()
      const responses = await Promise.all(
        Array.from({ length: inFlight }, () =>
          fetch(`${first.url}/v1/chat/completions`, {
            method: "POST",
            headers: { authorization: `Bearer ${account.key}`, "content-type": "application/json" },
            body: JSON.stringify({ model: "svc/slow", stream: true, max_tokens: 100, messages: [{ role: "user", content: words }] }),
            signal: controller.signal
          }))
      )
      expect(responses.map((response) => response.status)).toEqual(Array(inFlight).fill(200))
      const receiptIds = responses.map((response) => response.headers.get("x-svc-receipt-id")!)
      expect(new Set(receiptIds).size).toBe(inFlight)
      // The head of a stream is sent after its reservation: the credit is held now.
      const held = await accountOf(first, admin, account.id)
      expect(nanos(held.reserved_usd)).toBeGreaterThan(0n)
      if (direct !== undefined) {
        const open = await direct<{ id: string }>(
          "SELECT id FROM reservations WHERE account_id = $1 AND status = 'open'",
          [account.id]
        )
        // The account's first 8 calls reserve alone; a later one may already be held from the process's
        // credit lease (no row until it ends), as below.
        const openIds = open.map((row) => row.id)
        expect(openIds.filter((id) => !receiptIds.includes(id))).toEqual([])
        expect(openIds.length).toBeGreaterThanOrEqual(8)
      }

      expect(fake.requests.length, "every call reached the upstream").toBe(inFlight + 1)

      const killedAfter = Date.now() - sentAt
      await first.kill("SIGKILL")
      controller.abort()
      await Promise.allSettled(responses.map((response) => response.body?.cancel()))
      // The upstream saw every stream cut off midway: the calls were in flight when the process died.
      await Promise.race([
        fake.waitForAborts(inFlight),
        sleep(10_000).then(() => {
          throw new Error(`the upstream saw ${fake.clientAborts()} of ${inFlight} streams cut off`)
        })
      ])

      // Nothing runs now: the dead process's reservations still hold the credit.
      const stranded = await onDatabase(async (query) => {
        const reservations = await query<{ id: string; status: string; amount: string }>(
          "SELECT id, status, amount_usd::text AS amount FROM reservations WHERE account_id = $1 ORDER BY id",
          [account.id]
        )
        const [row] = await query<{ balance: string; reserved: string }>(
          "SELECT balance_usd::text AS balance, reserved_usd::text AS reserved FROM accounts WHERE id = $1",
          [account.id]
        )
        const receipts = await query("SELECT id FROM receipts WHERE account_id = $1", [account.id])
        // Ten calls at once make the account busy: the process may have leased credit for its next calls too.
        const [leases] = await query<{ leased: string }>(
          "SELECT coalesce(sum(amount_usd), 0)::text AS leased FROM credit_leases WHERE account_id = $1",
          [account.id]
        )
        return { reservations, row: row!, receipts, leased: nanos(leases!.leased) }
      })
      // The account's first 8 calls reserve alone; a later one may be held from the process's credit lease,
      // which has no row of its own until the call ends: its credit is in the lease.
      const rowIds = stranded.reservations.map((row) => row.id)
      expect(rowIds.filter((id) => !receiptIds.includes(id))).toEqual([])
      expect(rowIds.length).toBeGreaterThanOrEqual(8)
      if (rowIds.length < inFlight) expect(stranded.leased).toBeGreaterThan(0n)
      expect(
        stranded.reservations.map((row) => row.status),
        `still open: killed ${killedAfter} ms after the calls were sent`
      ).toEqual(Array(rowIds.length).fill("open"))
      expect(stranded.receipts).toEqual([])
      const heldTotal = stranded.reservations.reduce((sum, row) => sum + nanos(row.amount), 0n)
      expect(stranded.row).toEqual({ balance: credit, reserved: usd(heldTotal + stranded.leased) })
      expect(nanos(held.reserved_usd)).toBeGreaterThanOrEqual(heldTotal)
      expect(nanos(held.reserved_usd)).toBeLessThanOrEqual(heldTotal + stranded.leased)
      if (!onPostgres) {
        // The dead owner's lock file is left behind; the next process replaces it.
        expect(existsSync(join(database.env.SVC_DATA_DIR!, "svc.pid"))).toBe(true)
      }

      // A new process on the same database: its sweeper frees them once their lease has run out.
      const second = await startGatewayProcess({ env, config: config(1) })
      const restartedAt = Date.now()
      const freed = await waitFor("the sweeper to free the dead process's reservations", (lease + 5) * 1000, async () => {
        const now = await accountOf(second, admin, account.id)
        return now.reserved_usd === "0.000000000" ? now : undefined
      })
      console.log(
        `killed ${killedAfter} ms after sending; ${usd(heldTotal)} USD held; freed ${
          Date.now() - restartedAt
        } ms after the restart`
      )
      expect(freed).toEqual({ ...freed, balance_usd: credit, reserved_usd: "0.000000000", available_usd: credit })

      // On PGlite the database can be read directly only once the gateway let go of it.
      if (!onPostgres) await second.stop()
      await onDatabase(async (query) => {
        const reservations = await query<{ id: string; status: string }>(
          "SELECT id, status FROM reservations WHERE account_id = $1 ORDER BY id",
          [account.id]
        )
        expect(reservations).toEqual(rowIds.map((id) => ({ id, status: "released" })))
        const released = await query<{ receipt_id: string; reason: string }>(
          `SELECT receipt_id, data->>'reason' AS reason FROM events
           WHERE account_id = $1 AND type = 'payment.released' ORDER BY receipt_id`,
          [account.id]
        )
        expect(released).toEqual(rowIds.map((id) => ({ receipt_id: id, reason: "lease_expired" })))
        expect(await query("SELECT id FROM receipts WHERE account_id = $1", [account.id])).toEqual([])
        expect(await query("SELECT id FROM credit_leases WHERE account_id = $1", [account.id])).toEqual([])
        expect(await moneyViolations(query)).toEqual([])
      })
      await second.stop()
    },
    180_000
  )
})
