/**
 * Keys kept in memory by gateway processes sharing one PostgreSQL database
 * (layers/accounts/keyChanges.ts): a key another process revokes, or whose
 * limits it changes, stops being served from memory as soon as the change is
 * announced; a process that loses its listening connection forgets every key,
 * so a change it may not have heard cannot keep a key alive.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type TestGateway, startGateway } from "./support/gateway.ts"

const onPostgres = Boolean(process.env.DATABASE_URL)

describe.runIf(onPostgres)("keys kept in memory across processes", () => {
  let first: TestGateway
  let second: TestGateway
  beforeAll(async () => {
    first = await startGateway()
    second = await startGateway({ database: first.database })
  }, 60_000)
  afterAll(async () => {
    await second?.close()
    await first?.close()
  })

  const chat = (gateway: TestGateway, key: string) =>
    gateway.request("POST", "/v1/chat/completions", { key, body: { model: "svc/swift", messages: [{ role: "user", content: "hi" }] } })

  /** Polls until `gateway` answers the key's call with `status` (a notification takes milliseconds). */
  const answersWith = async (gateway: TestGateway, key: string, status: number) => {
    const deadline = Date.now() + 5_000
    let last = 0
    while (Date.now() < deadline) {
      last = (await chat(gateway, key)).status
      if (last === status) return
      await new Promise((wake) => setTimeout(wake, 20))
    }
    throw new Error(`still ${last}, not ${status}`)
  }

  it("a key revoked through another process stops working here", async () => {
    const { key, keyId } = await first.account()
    expect((await chat(first, key)).status).toBe(200)
    expect((await second.request("DELETE", `/v1/admin/keys/${keyId}`)).status).toBe(200)
    await answersWith(first, key, 401)
  })

  it("a key's new limits set through another process apply here", async () => {
    const { key, keyId } = await first.account()
    expect((await chat(first, key)).headers.get("x-ratelimit-limit-tokens")).toBeNull()
    expect((await second.request("PATCH", `/v1/admin/keys/${keyId}`, { body: { tpm: 50000 } })).status).toBe(200)
    const deadline = Date.now() + 5_000
    while ((await chat(first, key)).headers.get("x-ratelimit-limit-tokens") !== "50000") {
      if (Date.now() > deadline) throw new Error("the new limit did not arrive")
    }
  })

  it("keys are kept (a change made behind the gateways' back is not seen) until the listening connection is lost", async () => {
    const { key, keyId } = await first.account()
    expect((await chat(first, key)).status).toBe(200)
    // Revoked in SQL alone, announced to nobody: the process still knows the key.
    await first.query("UPDATE api_keys SET revoked_at = now() WHERE id = $1", [keyId])
    expect((await chat(first, key)).status).toBe(200)
    // Losing the connection makes each process forget what it knew: changes may have gone unheard.
    await first.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'svc-key-changes' AND datname = current_database()")
    await answersWith(first, key, 401)
  })
})
