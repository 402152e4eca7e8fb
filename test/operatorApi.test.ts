/**
 * The operator API over HTTP, checked against what lands in the database:
 * exact balances derivable from the ledger, keys stored only as hashes,
 * idempotent credits under concurrency, and data that survives a restart.
 * Runs on PGlite, and on PostgreSQL when DATABASE_URL is set.
 */
import { createHash } from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { freshDatabase, type TestDatabase } from "./support/database.ts"
import { startGateway, type TestGateway } from "./support/gateway.ts"

let database: TestDatabase
let gateway: TestGateway

beforeAll(async () => {
  database = await freshDatabase()
  gateway = await startGateway({ database })
})
afterAll(async () => {
  await gateway?.close()
  await database?.drop()
})

const post = (path: string, body: unknown) => gateway.request("POST", path, { body })

/** Balance on the account row must equal the sum of its ledger (migration 0025), to the last digit. */
const ledgerSum = async (accountId: string) => {
  const [row] = await gateway.query<{ sum: string | null }>(
    "SELECT sum(amount_usd)::text AS sum FROM ledger WHERE account_id = $1",
    [accountId]
  )
  return row!.sum
}

describe("operator API", () => {
  it("creates accounts with and without a starting credit, exactly", async () => {
    const empty = await post("/v1/admin/accounts", { name: "empty" })
    expect(empty.status).toBe(200)
    expect(empty.body).toMatchObject({ object: "account", name: "empty", balance_usd: "0.000000000", reserved_usd: "0.000000000" })
    expect(empty.body.id).toMatch(/^acct_[0-9a-f]{12}[A-Za-z0-9_-]{16}$/)

    const funded = await post("/v1/admin/accounts", { name: "funded", credit_usd: "10.123456789" })
    expect(funded.body.balance_usd).toBe("10.123456789")
    expect(funded.body.available_usd).toBe("10.123456789")
    expect(await ledgerSum(funded.body.id)).toBe("10.123456789")

    const read = await gateway.request("GET", `/v1/admin/accounts/${funded.body.id}`)
    expect(read.body).toEqual(funded.body)
  })

  it("issues keys that are shown once and stored only as a hash", async () => {
    const account = await post("/v1/admin/accounts", { name: "keys" })
    const created = await post(`/v1/admin/accounts/${account.body.id}/keys`, {
      name: "ci",
      scopes: ["chat", "monitoring", "chat"],
      rpm: 60
    })
    expect(created.status).toBe(200)
    expect(created.body.key).toMatch(/^svc_live_[0-9A-Za-z]{40}$/)
    expect(created.body).toMatchObject({
      object: "api_key",
      account_id: account.body.id,
      name: "ci",
      scopes: ["chat", "monitoring"],
      rpm: 60,
      tpm: null,
      revoked_at: null
    })
    expect(created.body.hint).toBe(created.body.key.slice(0, 13))
    const rows = await gateway.query("SELECT * FROM api_keys WHERE id = $1", [created.body.id])
    expect(JSON.stringify(rows)).not.toContain(created.body.key.slice(13))
    const hash = createHash("sha256").update(created.body.key).digest()
    expect(Buffer.from((rows[0] as any).secret_sha256).equals(hash)).toBe(true)

    const models = await gateway.request("GET", "/v1/models", { key: created.body.key })
    expect(models.status).toBe(200)
    const revoked = await gateway.request("DELETE", `/v1/admin/keys/${created.body.id}`)
    expect(revoked.body).not.toHaveProperty("key")
    expect((await gateway.request("GET", "/v1/models", { key: created.body.key })).status).toBe(401)
  })

  it("adds credit idempotently by reference, also when the same top-up races itself", async () => {
    const account = await post("/v1/admin/accounts", { name: "credits" })
    const id = account.body.id
    const first = await post(`/v1/admin/accounts/${id}/credits`, { amount_usd: "2.5", reference: "inv-1" })
    expect(first.body).toMatchObject({ object: "ledger_entry", kind: "credit", amount_usd: "2.500000000", balance_after_usd: "2.500000000" })
    const again = await post(`/v1/admin/accounts/${id}/credits`, { amount_usd: "2.500", reference: "inv-1" })
    expect(again.body).toEqual(first.body)

    const racing = await Promise.all(
      Array.from({ length: 20 }, () => post(`/v1/admin/accounts/${id}/credits`, { amount_usd: "1", reference: "inv-2" }))
    )
    expect(new Set(racing.map((response) => response.body.id)).size).toBe(1)
    const balance = (await gateway.request("GET", `/v1/admin/accounts/${id}`)).body.balance_usd
    expect(balance).toBe("3.500000000")
    expect(await ledgerSum(id)).toBe("3.500000000")
  })

  it("sums many small concurrent credits to the last digit", async () => {
    const account = await post("/v1/admin/accounts", { name: "dimes" })
    const id = account.body.id
    const responses = await Promise.all(
      Array.from({ length: 50 }, (_, i) => post(`/v1/admin/accounts/${id}/credits`, { amount_usd: "0.1", reference: `dime-${i}` }))
    )
    expect(responses.every((response) => response.status === 200)).toBe(true)
    const afters = responses.map((response) => response.body.balance_after_usd).sort()
    expect(new Set(afters).size).toBe(50)
    expect((await gateway.request("GET", `/v1/admin/accounts/${id}`)).body.balance_usd).toBe("5.000000000")
    expect(await ledgerSum(id)).toBe("5.000000000")
  })

  it("records account, key and payment events", async () => {
    const account = await post("/v1/admin/accounts", { name: "events", credit_usd: "1" })
    const key = await post(`/v1/admin/accounts/${account.body.id}/keys`, { scopes: ["chat"] })
    await gateway.request("DELETE", `/v1/admin/keys/${key.body.id}`)
    const events = await gateway.query<{ type: string; data: any }>(
      "SELECT type, data FROM event_log WHERE account_id = $1 ORDER BY created_at, id",
      [account.body.id]
    )
    expect(events.map((event) => event.type).sort()).toEqual(
      ["account.created", "key.created", "key.revoked", "payment.credit_added"].sort()
    )
    expect(JSON.stringify(events)).not.toContain(key.body.key)
  })

  it("lists accounts newest first, a page at a time, following next_cursor to the end", async () => {
    const created: Array<string> = []
    for (const name of ["page-1", "page-2", "page-3"]) created.push((await post("/v1/admin/accounts", { name })).body.id)
    const first = await gateway.request("GET", "/v1/admin/accounts?limit=2")
    expect(first.status).toBe(200)
    expect(first.body).toMatchObject({ object: "list", has_more: true, next_cursor: expect.any(String) })
    expect(first.body.data.map((account: { id: string }) => account.id)).toEqual([created[2], created[1]])
    expect(first.body.data[0]).toEqual((await gateway.request("GET", `/v1/admin/accounts/${created[2]}`)).body)
    const second = await gateway.request("GET", `/v1/admin/accounts?limit=1&cursor=${first.body.next_cursor}`)
    expect(second.body.data.map((account: { id: string }) => account.id)).toEqual([created[0]])

    const seen: Array<string> = []
    let cursor: string | null = null
    do {
      const page: { body: any } = await gateway.request("GET", `/v1/admin/accounts?limit=3${cursor === null ? "" : `&cursor=${cursor}`}`)
      expect(page.body.data.length).toBeLessThanOrEqual(3)
      expect(page.body.has_more).toBe(page.body.next_cursor !== null)
      seen.push(...page.body.data.map((account: { id: string }) => account.id))
      cursor = page.body.next_cursor
    } while (cursor !== null)
    const [{ count }] = await gateway.query<{ count: string }>("SELECT count(*)::text AS count FROM accounts") as [{ count: string }]
    expect(new Set(seen).size).toBe(seen.length)
    expect(seen.length).toBe(Number(count))
    // The default page holds up to 100.
    expect((await gateway.request("GET", "/v1/admin/accounts")).body.data.length).toBe(Math.min(100, seen.length))
  })

  it("lists an account's keys newest first, revoked ones with their revocation time and never a secret", async () => {
    const account = await post("/v1/admin/accounts", { name: "listed keys" })
    const older = await post(`/v1/admin/accounts/${account.body.id}/keys`, { scopes: ["chat"], name: "older" })
    const newer = await post(`/v1/admin/accounts/${account.body.id}/keys`, { scopes: ["monitoring"], name: "newer" })
    const revoked = await gateway.request("DELETE", `/v1/admin/keys/${older.body.id}`)
    const list = await gateway.request("GET", `/v1/admin/accounts/${account.body.id}/keys`)
    expect(list.status).toBe(200)
    const { key: _, ...newerRecord } = newer.body
    expect(list.body).toEqual({ object: "list", data: [newerRecord, revoked.body], next_cursor: null, has_more: false })
    expect(revoked.body.revoked_at).toEqual(expect.any(String))
    expect(JSON.stringify(list.body)).not.toContain(older.body.key)
    expect(JSON.stringify(list.body)).not.toContain(newer.body.key)
    const missing = await gateway.request("GET", "/v1/admin/accounts/acct_missing/keys")
    expect(missing.status).toBe(404)
    expect(missing.body.error.code).toBe("not_found")
  })

  it("refuses a cursor it did not give out and a limit out of range, naming the parameter; lists are for admin keys", async () => {
    const page = await gateway.request("GET", "/v1/admin/accounts?limit=1")
    const cursor: string = page.body.next_cursor
    const tampered = Buffer.from(Buffer.from(cursor, "base64url").toString().replace(/^\d+/, "x")).toString("base64url")
    for (const bad of ["nope", "", `${cursor}=`, `${cursor}!`, tampered, Buffer.from("99999999999999999999:acct_x").toString("base64url")]) {
      const refused = await gateway.request("GET", `/v1/admin/accounts?cursor=${encodeURIComponent(bad)}`)
      expect(refused.status, bad).toBe(400)
      expect(refused.body.error).toMatchObject({ code: "invalid_request", param: "cursor" })
    }
    for (const bad of ["0", "1001", "abc", "1.5", "-1"]) {
      const refused = await gateway.request("GET", `/v1/admin/accounts?limit=${bad}`)
      expect(refused.status, bad).toBe(400)
      expect(refused.body.error).toMatchObject({ code: "invalid_request", param: "limit", message: "limit: must be a whole number from 1 to 1000" })
    }
    const customer = await gateway.account({ scopes: ["chat", "monitoring"] })
    for (const path of ["/v1/admin/accounts", `/v1/admin/accounts/${customer.id}/keys`]) {
      const refused = await gateway.request("GET", path, { key: customer.key })
      expect(refused.status).toBe(401)
      expect(JSON.stringify(refused.body)).not.toContain(customer.id)
    }
  })

  it("keeps everything across a restart on the same database", async () => {
    const account = await post("/v1/admin/accounts", { name: "durable", credit_usd: "7" })
    const key = await post(`/v1/admin/accounts/${account.body.id}/keys`, { scopes: ["chat"] })
    await gateway.close()
    gateway = await startGateway({ database })
    expect((await gateway.request("GET", `/v1/admin/accounts/${account.body.id}`)).body.balance_usd).toBe("7.000000000")
    expect((await gateway.request("GET", "/v1/models", { key: key.body.key })).status).toBe(200)
    const migrations = await gateway.query("SELECT * FROM svc_migrations")
    expect(migrations.length).toBeGreaterThanOrEqual(2)
  })
})
