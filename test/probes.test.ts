/**
 * The probes through the server, without a key: liveness always 200;
 * readiness 200 on a migrated database and 503 `service_unavailable` (with
 * `Retry-After`) when the database is behind this build's schema, as a
 * process of a newer version would see an older database.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { LATEST_MIGRATION } from "../layers/storage/Migrations.ts"
import { startGateway, type TestGateway } from "./support/gateway.ts"

let gateway: TestGateway

beforeAll(async () => {
  gateway = await startGateway()
}, 120_000)

afterAll(() => gateway?.close())

const sleep = (ms: number) => new Promise<void>((wake) => setTimeout(wake, ms))

describe("probes", () => {
  it("answers liveness and readiness without a key", async () => {
    expect(await gateway.request("GET", "/healthz", { key: null })).toMatchObject({ status: 200, body: { status: "ok" } })
    expect(await gateway.request("GET", "/readyz", { key: null })).toMatchObject({
      status: 200,
      body: { status: "ready", migration: LATEST_MIGRATION }
    })
  })

  it("is not ready while the database is behind this build's schema, and ready again once it has caught up", async () => {
    const [last] = await gateway.query<{ migration_id: number; name: string; created_at: Date }>(
      "DELETE FROM svc_migrations WHERE migration_id = $1 RETURNING *",
      [LATEST_MIGRATION]
    )
    try {
      // The answer is kept for a second.
      await sleep(1_100)
      const answer = await gateway.request("GET", "/readyz", { key: null })
      expect(answer.status).toBe(503)
      expect(answer.body.error).toMatchObject({ code: "service_unavailable", type: "api_error" })
      expect(answer.body.error.message).toBe(`Not ready: the database schema is at migration ${LATEST_MIGRATION - 1} of ${LATEST_MIGRATION}.`)
      expect(answer.headers.get("retry-after")).toBe("5")
      expect((await gateway.request("GET", "/healthz", { key: null })).status).toBe(200)
    } finally {
      await gateway.query("INSERT INTO svc_migrations (migration_id, name, created_at) VALUES ($1, $2, $3)", [
        last!.migration_id,
        last!.name,
        last!.created_at
      ])
    }
    await sleep(1_100)
    expect((await gateway.request("GET", "/readyz", { key: null })).status).toBe(200)
  })
})
