/**
 * Rate limits across real gateway processes (`node --import tsx
 * src/main.ts`): two processes on one PostgreSQL database, counting in the
 * database or in Redis, serve one key together, and the key's rpm and tpm
 * hold in total. Needs DATABASE_URL (PGlite serves one process only); Redis
 * at 127.0.0.1:6379, under a key prefix of this run that is deleted after.
 */
import { randomBytes } from "node:crypto"
import { afterAll, describe, expect, it } from "vitest"
import { freshDatabase, type TestDatabase } from "./support/database.ts"
import { type GatewayProcess, startGatewayProcess, stopAllGatewayProcesses } from "./support/gatewayProcess.ts"
import { dropPrefixes, TEST_REDIS_URL, testPrefix } from "./support/redis.ts"

const onPostgres = Boolean(process.env.DATABASE_URL)
const databases: Array<TestDatabase> = []
const prefixes: Array<string> = []

afterAll(async () => {
  await stopAllGatewayProcesses()
  await Promise.allSettled(databases.map((database) => database.drop()))
  await dropPrefixes(prefixes)
})

const post = (gateway: GatewayProcess, path: string, key: string, body: unknown) =>
  fetch(`${gateway.url}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(30_000)
  })

/** Two processes on a fresh database (counting in Redis when `redis` is set), and a key with `limits` made on the first. */
const twoProcesses = async (limits: { rpm?: number; tpm?: number }, redis: boolean) => {
  const database = await freshDatabase()
  databases.push(database)
  const admin = `admin_${randomBytes(16).toString("hex")}`
  const prefix = testPrefix()
  if (redis) prefixes.push(prefix)
  const config = {
    limits: { redisKeyPrefix: prefix },
    providers: [{ id: "sandbox", plugin: "sandbox", deployments: [{ model: "svc/swift" }] }]
  }
  const env = { ...database.env, SVC_ADMIN_KEY: admin, ...(redis ? { REDIS_URL: TEST_REDIS_URL } : {}) }
  const gateways = await Promise.all([startGatewayProcess({ env, config }), startGatewayProcess({ env, config })])
  const account: any = await (await post(gateways[0], "/v1/admin/accounts", admin, { name: "limited", credit_usd: "100" })).json()
  const key: any = await (await post(gateways[0], `/v1/admin/accounts/${account.id}/keys`, admin, { scopes: ["chat"], ...limits }))
    .json()
  return { gateways, key: key.key as string }
}

/** `count` calls spread over both processes at once; their statuses and headers. */
const burst = async (gateways: ReadonlyArray<GatewayProcess>, key: string, count: number, body: unknown) =>
  Promise.all(Array.from({ length: count }, async (_, i) => {
    const response = await post(gateways[i % 2]!, "/v1/chat/completions", key, body)
    await response.arrayBuffer()
    return response
  }))

const hello = { model: "svc/swift", messages: [{ role: "user", content: "hello from two processes" }] }

describe.each([
  { store: "PostgreSQL", redis: false },
  { store: "Redis", redis: true }
])("rate limits across two gateway processes counting in $store", ({ redis, store }) => {
  it.skipIf(!onPostgres)(
    onPostgres
      ? `rpm 6: of 30 calls at once through two processes, exactly 6 are served (${store})`
      : "rpm across processes (skipped: needs DATABASE_URL — PGlite serves one process only)",
    async () => {
      const { gateways, key } = await twoProcesses({ rpm: 6 }, redis)
      const responses = await burst(gateways, key, 30, hello)
      const served = responses.filter((response) => response.status === 200)
      const refused = responses.filter((response) => response.status === 429)
      expect(served).toHaveLength(6)
      expect(refused).toHaveLength(24)
      for (const response of refused) {
        expect(Number(response.headers.get("retry-after"))).toBeGreaterThanOrEqual(1)
        expect(response.headers.get("x-ratelimit-limit-requests")).toBe("6")
        expect(response.headers.get("x-ratelimit-remaining-requests")).toBe("0")
      }
      // One count for both processes: each served call saw a different number left.
      const remaining = served.map((response) => Number(response.headers.get("x-ratelimit-remaining-requests"))).sort()
      expect(remaining).toEqual([0, 1, 2, 3, 4, 5])
    },
    120_000
  )

  it.skipIf(!onPostgres)(
    onPostgres
      ? `tpm 3000: calls of ~600 tokens at once through two processes use no more than the key's tokens (${store})`
      : "tpm across processes (skipped: needs DATABASE_URL — PGlite serves one process only)",
    async () => {
      const { gateways, key } = await twoProcesses({ tpm: 3000 }, redis)
      // The sandbox uses every output token asked for, so a call's real tokens are about its estimate.
      const body = { model: "svc/swift", max_tokens: 50, messages: [{ role: "user", content: "word ".repeat(550) }] }
      const started = Date.now()
      const responses = await Promise.all(Array.from({ length: 16 }, async (_, i) => {
        const response = await post(gateways[i % 2]!, "/v1/chat/completions", key, body)
        return { status: response.status, headers: response.headers, body: await response.json() as any }
      }))
      const refilled = (Date.now() - started) / 60_000 * 3000
      const served = responses.filter((response) => response.status === 200)
      const used = served.reduce((sum, response) => sum + response.body.usage.total_tokens, 0)
      expect(served.length).toBeGreaterThanOrEqual(4)
      // Counted per process, each would have let about 5 through: 10 calls, twice the key's tokens.
      expect(used).toBeLessThanOrEqual(3000 + refilled + 100)
      const refused = responses.filter((response) => response.status === 429)
      expect(refused.length).toBeGreaterThanOrEqual(16 - 6)
      expect(refused[0]!.headers.get("x-ratelimit-limit-tokens")).toBe("3000")
      expect(refused[0]!.body.error.code).toBe("rate_limited")
    },
    120_000
  )
})
