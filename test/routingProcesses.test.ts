/**
 * Three gateway processes on one PostgreSQL database: a deployment that fails
 * in one process is avoided by the other two within the stated time (the
 * breaker state is shared through the database and re-read every
 * `syncMillis`). PostgreSQL only: PGlite serves one process.
 */
import { randomBytes } from "node:crypto"
import { afterAll, describe, expect, it } from "vitest"
import { freshDatabase, type TestDatabase } from "./support/database.ts"
import { type FakeOpenAi, startFakeOpenAi } from "./support/fakeOpenAiUpstream.ts"
import { startGatewayProcess, stopAllGatewayProcesses } from "./support/gatewayProcess.ts"

const onPostgres = Boolean(process.env.DATABASE_URL)
const SYNC_MILLIS = 200
/** What the README promises: others avoid it within about `syncMillis`; allowed here with slack for a loaded machine. */
const STATED_MS = 5 * SYNC_MILLIS

const fakes: Array<FakeOpenAi> = []
let database: TestDatabase | undefined

afterAll(async () => {
  await stopAllGatewayProcesses()
  await Promise.all(fakes.map((fake) => fake.close()))
  await database?.drop()
})

const post = async (url: string, key: string, body: unknown) => {
  const response = await fetch(url, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(30_000)
  })
  return { status: response.status, body: await response.json() as any }
}

const sleep = (ms: number) => new Promise<void>((wake) => setTimeout(wake, ms))

describe("routing across gateway processes", () => {
  it.skipIf(!onPostgres)(
    onPostgres
      ? `a deployment that fails in one process is avoided by the others within ${STATED_MS} ms`
      : "a failing deployment is avoided by every process (skipped: needs DATABASE_URL — PGlite serves one process only)",
    async () => {
      const [failing, healthy] = await Promise.all([startFakeOpenAi(), startFakeOpenAi()])
      fakes.push(failing!, healthy!)
      failing!.behave({ status: 503 })
      database = await freshDatabase()
      const admin = `admin_${randomBytes(16).toString("hex")}`
      const config = {
        routing: { health: { failureThreshold: 3, cooldownSeconds: 60, syncMillis: SYNC_MILLIS } },
        models: [{
          id: "svc/shared",
          context: 32000,
          pricing: { input: "1.00", output: "2.00" },
          modalities: ["text"],
          capabilities: ["chat"]
        }],
        providers: [
          // The failing deployment is the cheaper one: every process tries it first while it is closed.
          {
            id: "cheap-but-down",
            plugin: "openai-compatible",
            baseUrl: failing!.baseUrl,
            deployments: [{ model: "svc/shared", cost: { input: "0.10", output: "0.20" } }]
          },
          {
            id: "dear-but-up",
            plugin: "openai-compatible",
            baseUrl: healthy!.baseUrl,
            deployments: [{ model: "svc/shared", cost: { input: "0.50", output: "1.00" } }]
          }
        ]
      }
      const start = () => startGatewayProcess({ env: { ...database!.env, SVC_ADMIN_KEY: admin }, config })
      const [one, two, three] = await Promise.all([start(), start(), start()])

      const account = await post(`${one.url}/v1/admin/accounts`, admin, { name: "routing", credit_usd: "10" })
      const key = (await post(`${one.url}/v1/admin/accounts/${account.body.id}/keys`, admin, { scopes: ["chat"] })).body.key
      const call = (url: string) =>
        post(`${url}/v1/chat/completions`, key, { model: "svc/shared", messages: [{ role: "user", content: "hi" }] })

      // Process one learns: three calls, each failing over from the cheap deployment to the dear one.
      for (let i = 0; i < 3; i++) expect((await call(one.url)).status).toBe(200)
      expect(failing!.requests.length).toBeGreaterThanOrEqual(3)
      const triedBefore = failing!.requests.length

      // The others stop trying it within the stated time.
      await sleep(STATED_MS)
      const answers = await Promise.all([two, three, one].flatMap((gateway) => [call(gateway.url), call(gateway.url)]))
      expect(answers.map((answer) => answer.status)).toEqual([200, 200, 200, 200, 200, 200])
      expect(failing!.requests.length - triedBefore).toBe(0)
    },
    120_000
  )
})
