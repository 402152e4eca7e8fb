/**
 * The event log's pages while other processes write (PostgreSQL only: the
 * embedded database has one connection, so nothing commits concurrently).
 *
 * - A transaction that commits late, after a newer one has committed, is not
 *   passed over: the newer event waits until the older transaction ends.
 * - Two writer processes commit (and roll back) events in transactions held
 *   open for random times while a reader polls `GET /v1/logs` for what is
 *   newer than the newest event it saw, and another walks the pages down:
 *   the poller ends with every committed event exactly once, and every walk
 *   is in the final order with nothing twice.
 */
import { spawn } from "node:child_process"
import pg from "pg"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startGateway, type TestGateway } from "./support/gateway.ts"

const onPostgres = Boolean(process.env.DATABASE_URL)

let gateway: TestGateway
let account: { id: string; key: string }
const clients: Array<pg.Client> = []

beforeAll(async () => {
  if (!onPostgres) return
  gateway = await startGateway()
  account = await gateway.account({ credit: "1", scopes: ["monitoring"] })
})
afterAll(async () => {
  await Promise.allSettled(clients.map((client) => client.end()))
  await gateway?.close()
})

const connect = async () => {
  const client = new pg.Client({ connectionString: gateway.database.env.DATABASE_URL })
  clients.push(client)
  await client.connect()
  return client
}

const insertEvent = (client: pg.Client, id: string) =>
  client.query(
    "INSERT INTO events (id, type, account_id, data) VALUES ($1, 'key.created', $2, '{}'::jsonb)",
    [id, account.id]
  )

const page = async (limit: number, cursor: string | null) => {
  const answer = await gateway.request("GET", `/v1/logs?limit=${limit}${cursor === null ? "" : `&cursor=${cursor}`}`, { key: account.key })
  expect(answer.status).toBe(200)
  return answer.body as { data: Array<{ id: string }>; next_cursor: string | null }
}

/** The first page's ids once `ready` holds of them (another suite's transaction may hold the horizon back a moment). */
const firstPageWhen = async (ready: (ids: ReadonlyArray<string>) => boolean) => {
  for (let tries = 0; ; tries++) {
    const ids = (await page(1000, null)).data.map((event) => event.id)
    if (ready(ids) || tries >= 200) return ids
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

/** Every event id, newest first, walking pages of `limit`. */
const walk = async (limit: number) => {
  const ids: Array<string> = []
  let cursor: string | null = null
  do {
    const next = await page(limit, cursor)
    ids.push(...next.data.map((event) => event.id))
    cursor = next.next_cursor
  } while (cursor !== null)
  return ids
}

/** What is newer than anything in `seen`, read from the first page down until a seen event. */
const newerThan = async (seen: ReadonlySet<string>, limit: number) => {
  const fresh: Array<string> = []
  let cursor: string | null = null
  do {
    const next = await page(limit, cursor)
    const stop = next.data.findIndex((event) => seen.has(event.id))
    if (stop >= 0) {
      fresh.push(...next.data.slice(0, stop).map((event) => event.id))
      // Below the first seen event everything was seen already.
      expect(next.data.slice(stop).every((event) => seen.has(event.id))).toBe(true)
      return fresh
    }
    fresh.push(...next.data.map((event) => event.id))
    cursor = next.next_cursor
  } while (cursor !== null)
  return fresh
}

/** A writer process: `count` transactions of 1–3 events, each held open 0–12 ms, one in ten rolled back. */
const WRITER = `
const pg = require("pg")
const [url, accountId, prefix, count] = process.argv.slice(1)
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))
;(async () => {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  const committed = []
  for (let t = 0; t < Number(count); t++) {
    await client.query("BEGIN")
    const ids = []
    for (let e = 0; e < 1 + Math.floor(Math.random() * 3); e++) {
      const id = prefix + "_" + t + "_" + e
      await client.query("INSERT INTO events (id, type, account_id, data) VALUES ($1, 'key.created', $2, '{}'::jsonb)", [id, accountId])
      ids.push(id)
    }
    await sleep(Math.random() * 12)
    if (Math.random() < 0.1) await client.query("ROLLBACK")
    else {
      await client.query("COMMIT")
      committed.push(...ids)
    }
  }
  await client.end()
  process.stdout.write(JSON.stringify(committed))
})().catch((error) => { console.error(error); process.exit(1) })
`

const runWriter = (prefix: string, count: number) =>
  new Promise<Array<string>>((resolve, reject) => {
    const child = spawn(process.execPath, ["-e", WRITER, gateway.database.env.DATABASE_URL!, account.id, prefix, String(count)], {
      cwd: process.cwd(),
      stdio: ["ignore", "pipe", "inherit"]
    })
    let out = ""
    child.stdout.on("data", (chunk) => (out += chunk))
    child.on("error", reject)
    child.on("exit", (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`writer ${prefix} exited ${code}`))))
  })

describe.skipIf(!onPostgres)("the event log under concurrent writers (PostgreSQL)", () => {
  it("holds back a newer event until an older transaction commits, then lists both, newest first", async () => {
    const older = await connect()
    const newer = await connect()
    // The account's own events: it was created with a key.
    const before = await firstPageWhen((ids) => ids.length >= 3)
    await older.query("BEGIN")
    await insertEvent(older, "evt_late_older")
    await insertEvent(newer, "evt_late_newer")
    const meanwhile = (await page(1000, null)).data.map((event) => event.id)
    // Listing the newer one now would let a poller step past the older one when it commits.
    expect(meanwhile).toEqual(before)
    await older.query("COMMIT")
    const after = await firstPageWhen((ids) => ids.includes("evt_late_older"))
    expect(after.slice(0, 2)).toEqual(["evt_late_newer", "evt_late_older"])
    expect(after.slice(2)).toEqual(before)
  })

  it("gives a poller every committed event exactly once and every walk the final order", async () => {
    const seen = new Set<string>(await walk(1000))
    const polled: Array<string> = []
    const walks: Array<Array<string>> = []
    let writing = true
    const writers = Promise.all([runWriter("evt_w1", 120), runWriter("evt_w2", 120)]).then((both) => both.flat()).finally(() => {
      writing = false
    })
    const poller = (async () => {
      while (writing) {
        for (const id of await newerThan(seen, 4)) {
          expect(seen.has(id)).toBe(false)
          seen.add(id)
          polled.push(id)
        }
      }
    })()
    const walker = (async () => {
      while (writing) walks.push(await walk(9))
    })()
    const committed = await writers
    await Promise.all([poller, walker])
    // Polls once every writer has ended, until what they committed is listed (a transaction of another
    // suite on the same server may hold the horizon back for a moment).
    for (let tries = 0; tries < 200 && polled.length < committed.length; tries++) {
      for (const id of await newerThan(seen, 4)) {
        expect(seen.has(id)).toBe(false)
        seen.add(id)
        polled.push(id)
      }
      if (polled.length < committed.length) await new Promise((resolve) => setTimeout(resolve, 50))
    }
    expect(committed.length).toBeGreaterThan(100)
    expect(new Set(polled).size).toBe(polled.length)
    expect([...polled].sort()).toEqual([...committed].sort())
    const final = await walk(1000)
    expect(new Set(final)).toEqual(seen)
    const rank = new Map(final.map((id, index) => [id, index]))
    expect(walks.length).toBeGreaterThan(1)
    for (const walked of walks) {
      expect(new Set(walked).size).toBe(walked.length)
      const ranks = walked.map((id) => rank.get(id))
      expect(ranks.every((r) => r !== undefined)).toBe(true)
      expect(ranks).toEqual([...ranks].sort((a, b) => a! - b!))
    }
  })
})
