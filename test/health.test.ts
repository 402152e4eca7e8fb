/**
 * Deployment health shared through the database: the circuit breaker (opens
 * on consecutive failures or a Retry-After, one probe cluster-wide when the
 * cooldown ends, closes on its success), the rolling numbers, the rule that a
 * healthy deployment's successes write nothing, and `GET /v1/providers/health`
 * (per model and class for API keys without any upstream name; per deployment
 * for operators, merged over processes).
 *
 * The service is driven directly on real gateways (`gateway.run`). Two
 * gateways on one database need PostgreSQL: PGlite serves one process only,
 * so there the cross-process cases are skipped and the rest run on one gateway.
 */
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Catalogue } from "../services/Catalogue.ts"
import { Health, type Outcome } from "../services/Health.ts"
import { startGateway, type TestGateway } from "./support/gateway.ts"

const onPostgres = Boolean(process.env.DATABASE_URL)

const SECRET_URL = "http://127.0.0.1:9/v1"
const SECRET_UPSTREAM = "hidden-upstream-model"

const config = {
  routing: {
    health: { failureThreshold: 3, cooldownSeconds: 1, maxCooldownSeconds: 2, syncMillis: 100, statsFlushMillis: 200 }
  },
  providers: [
    {
      // Several deployments of one model so that each test has breakers of its own.
      id: "house",
      plugin: "sandbox",
      deployments: [
        { model: "svc/pro" },
        ...Array.from({ length: 9 }, () => ({ model: "svc/swift" }))
      ]
    },
    {
      id: "remote-secret",
      plugin: "openai-compatible",
      baseUrl: SECRET_URL,
      privacy: { stores: false, logs: false, trains: false },
      deployments: [{ model: "svc/pro", upstreamModel: SECRET_UPSTREAM }]
    }
  ]
}

type HealthService = typeof Health.Service

const withHealth = <A>(gateway: TestGateway, use: (health: HealthService) => Effect.Effect<A>) =>
  gateway.run(Effect.flatMap(Health, use))
const view = (gateway: TestGateway, deployment: string) => gateway.run(Effect.map(Health, (health) => health.view(deployment)))
const admits = (gateway: TestGateway, deployment: string) => withHealth(gateway, (health) => health.admits(deployment))
const record = (gateway: TestGateway, ...outcomes: ReadonlyArray<Outcome>) =>
  withHealth(gateway, (health) => Effect.forEach(outcomes, health.record, { discard: true }))

/** The ids of a model's deployments, in config order. */
const deploymentsOf = (gateway: TestGateway, model: string) =>
  gateway.run(Effect.map(Catalogue, (catalogue) => catalogue.deployments(model).map((deployment) => deployment.id)))

const failure = (deployment: string, extra: Partial<Outcome> = {}): Outcome => ({
  deployment,
  model: "svc/swift",
  ok: false,
  failure: "status",
  status: 503,
  latencyMs: 5,
  attempt: 1,
  ...extra
})
const success = (deployment: string, extra: Partial<Outcome> = {}): Outcome => ({
  deployment,
  model: "svc/swift",
  ok: true,
  latencyMs: 40,
  attempt: 1,
  ...extra
})

const sleep = (ms: number) => new Promise<void>((wake) => setTimeout(wake, ms))

/** Polls until `check` holds; fails after `ms`. Answers how long it took. */
const within = async (ms: number, what: string, check: () => Promise<boolean>) => {
  const started = Date.now()
  while (!(await check())) {
    if (Date.now() - started > ms) throw new Error(`not within ${ms} ms: ${what}`)
    await sleep(20)
  }
  return Date.now() - started
}

/**
 * Waits for the cooldown to end: the breaker reads half-open, and by the database's clock too, which
 * the probe is claimed against (the process only estimates it: on a loaded machine the view turned
 * half-open a few milliseconds before the claim could succeed).
 */
const halfOpen = (gateway: TestGateway, deployment: string) =>
  within(5_000, `${deployment} half-open`, async () =>
    (await view(gateway, deployment)).state === "half_open" &&
    (await gateway.query<{ due: boolean }>(
      "SELECT retry_at <= now() AS due FROM deployment_breakers WHERE deployment = $1",
      [deployment]
    ))[0]?.due === true)

const breakerRow = async (gateway: TestGateway, deployment: string) =>
  (await gateway.query<{ state: string; consecutive_failures: number; version: string; updated_at: Date }>(
    "SELECT state, consecutive_failures, version, updated_at FROM deployment_breakers WHERE deployment = $1",
    [deployment]
  ))[0]

/** A histogram percentile is in the exact one's bucket: within a factor 2^(1/4). */
const nearly = (actual: number | null, exact: number) => {
  expect(actual).not.toBeNull()
  expect(actual!).toBeGreaterThanOrEqual(exact / 2 ** 0.25)
  expect(actual!).toBeLessThanOrEqual(exact * 2 ** 0.25)
}

describe("deployment health in one gateway", () => {
  let gateway: TestGateway
  let swift: ReadonlyArray<string>

  beforeAll(async () => {
    gateway = await startGateway({ config })
    swift = await deploymentsOf(gateway, "svc/swift")
  })
  afterAll(() => gateway?.close())

  it("opens after three consecutive failures, at once, until the cooldown ends", async () => {
    const deployment = swift[0]!
    await record(gateway, failure(deployment), failure(deployment))
    expect(await admits(gateway, deployment)).toBe(true)
    expect((await view(gateway, deployment)).state).toBe("closed")

    const before = Date.now()
    await record(gateway, failure(deployment))
    expect(await admits(gateway, deployment)).toBe(false)
    const open = await view(gateway, deployment)
    expect(open).toMatchObject({ state: "open", consecutiveFailures: 3, requests: 3, failures: 3 })
    expect(open.retryAt!.getTime() - before).toBeGreaterThan(800)
    expect(open.retryAt!.getTime() - before).toBeLessThan(1_500)
    expect(await breakerRow(gateway, deployment)).toMatchObject({ state: "open", consecutive_failures: 3 })
  })

  it("a success between failures starts the count again", async () => {
    const deployment = swift[1]!
    await record(gateway, failure(deployment), failure(deployment), success(deployment), failure(deployment), failure(deployment))
    expect(await admits(gateway, deployment)).toBe(true)
    expect((await view(gateway, deployment)).consecutiveFailures).toBe(2)
  })

  it("lets exactly one of many concurrent callers probe after the cooldown; its success closes the breaker", async () => {
    const deployment = swift[2]!
    await record(gateway, failure(deployment), failure(deployment), failure(deployment))
    expect(await admits(gateway, deployment)).toBe(false)
    await halfOpen(gateway, deployment)

    const answers = await Promise.all(Array.from({ length: 25 }, () => admits(gateway, deployment)))
    expect(answers.filter(Boolean)).toHaveLength(1)
    // The probe is out: nobody else gets in while it runs.
    expect(await admits(gateway, deployment)).toBe(false)

    await record(gateway, success(deployment))
    expect(await view(gateway, deployment)).toMatchObject({ state: "closed", consecutiveFailures: 0, retryAt: undefined })
    expect(await admits(gateway, deployment)).toBe(true)
    expect(await breakerRow(gateway, deployment)).toMatchObject({ state: "closed", consecutive_failures: 0 })
  })

  it("a failed probe opens it again for twice the cooldown, up to the maximum", async () => {
    const deployment = swift[3]!
    await record(gateway, failure(deployment), failure(deployment), failure(deployment))
    await halfOpen(gateway, deployment)
    expect(await admits(gateway, deployment)).toBe(true)

    let before = Date.now()
    await record(gateway, failure(deployment))
    let reopened = await view(gateway, deployment)
    expect(reopened.state).toBe("open")
    // 1 s doubled.
    expect(reopened.retryAt!.getTime() - before).toBeGreaterThan(1_800)
    expect(reopened.retryAt!.getTime() - before).toBeLessThan(2_500)

    await halfOpen(gateway, deployment)
    expect(await admits(gateway, deployment)).toBe(true)
    before = Date.now()
    await record(gateway, failure(deployment))
    reopened = await view(gateway, deployment)
    // 2 s doubled is 4 s, but the maximum is 2 s.
    expect(reopened.retryAt!.getTime() - before).toBeGreaterThan(1_800)
    expect(reopened.retryAt!.getTime() - before).toBeLessThan(2_500)
    expect(reopened.consecutiveFailures).toBe(5)
  })

  it("a Retry-After opens it at once, until then", async () => {
    const deployment = swift[4]!
    const before = Date.now()
    await record(gateway, failure(deployment, { status: 429, retryAfterSeconds: 2 }))
    expect(await admits(gateway, deployment)).toBe(false)
    const cooling = await view(gateway, deployment)
    expect(cooling).toMatchObject({ state: "open", consecutiveFailures: 1 })
    expect(cooling.retryAt!.getTime() - before).toBeGreaterThan(1_800)
    expect(cooling.retryAt!.getTime() - before).toBeLessThan(2_500)

    // A success of a call sent before does not cut the cooldown short.
    await record(gateway, success(deployment))
    expect(await admits(gateway, deployment)).toBe(false)

    const waited = await halfOpen(gateway, deployment)
    expect(Date.now() - before).toBeGreaterThanOrEqual(1_900)
    expect(waited).toBeLessThan(3_000)
    expect(await admits(gateway, deployment)).toBe(true)
    expect(await admits(gateway, deployment)).toBe(false)
  })

  it("successes of a healthy deployment write nothing; the first success after failures writes once", async () => {
    const deployment = swift[5]!
    await record(gateway, ...Array.from({ length: 50 }, () => success(deployment)))
    expect(await breakerRow(gateway, deployment)).toBeUndefined()

    await record(gateway, failure(deployment))
    const failed = await breakerRow(gateway, deployment)
    expect(failed).toMatchObject({ state: "closed", consecutive_failures: 1 })

    await record(gateway, success(deployment))
    const recovered = await breakerRow(gateway, deployment)
    expect(recovered).toMatchObject({ state: "closed", consecutive_failures: 0 })
    expect(Number(recovered!.version)).toBe(Number(failed!.version) + 1)

    await record(gateway, ...Array.from({ length: 50 }, () => success(deployment)))
    // Give a sync a chance to run: it reads, and must not write either.
    await sleep(300)
    expect(await breakerRow(gateway, deployment)).toEqual(recovered)
  })

  it("views the rolling window: counts, fallbacks, exact percentiles, time to first token, throughput", async () => {
    const deployment = swift[6]!
    // Latencies 10..200 ms; every fifth one a fallback; streams with a 5 ms first token and 10 tokens.
    const outcomes = Array.from({ length: 20 }, (_, i) =>
      success(deployment, { latencyMs: (i + 1) * 10, attempt: i % 5 === 0 ? 2 : 1, ttftMs: 5, outputTokens: 10 }))
    await record(gateway, ...outcomes, failure(deployment, { latencyMs: 1 }), failure(deployment, { latencyMs: 1 }))

    const health = await view(gateway, deployment)
    expect(health).toMatchObject({ requests: 22, failures: 2, fallbacks: 4, consecutiveFailures: 2, state: "closed" })
    // Nearest rank over the successes: the 10th and the 19th of 20.
    expect(health.p50LatencyMs).toBe(100)
    expect(health.p95LatencyMs).toBe(190)
    expect(health.p50TtftMs).toBe(5)
    // 200 tokens over Σ(latency − ttft) = 2100 − 100 ms.
    expect(health.tokensPerSecond).toBeCloseTo(200 / 2, 6)
  })

  it("keeps the last 200 outcomes at most", async () => {
    const deployment = swift[7]!
    await record(gateway, ...Array.from({ length: 250 }, (_, i) => success(deployment, { latencyMs: i < 50 ? 1_000 : 20 })))
    const health = await view(gateway, deployment)
    expect(health.requests).toBe(200)
    // The slow first 50 left the window.
    expect(health.p95LatencyMs).toBe(20)
  })

  it("GET /v1/providers/health: per model and class for API keys, nothing naming an upstream", async () => {
    const [house, remote] = await deploymentsOf(gateway, "svc/pro")
    expect([house, remote]).toEqual(["house/0", "remote-secret/0"])
    const latencies = Array.from({ length: 10 }, (_, i) => (i + 1) * 10)
    await record(
      gateway,
      ...latencies.map((latencyMs, i) => success(house!, { model: "svc/pro", latencyMs, attempt: i < 2 ? 2 : 1 })),
      // A long Retry-After keeps it open (not half-open) however slow the rest of the test is.
      ...Array.from({ length: 3 }, () => failure(remote!, { model: "svc/pro", retryAfterSeconds: 120 }))
    )
    const monitoring = await gateway.account({ scopes: ["monitoring"] })
    const get = (key: string) => gateway.request("GET", "/v1/providers/health", { key })

    // The stats reach the table on the next flush.
    await within(5_000, "stats flushed", async () => {
      const { body } = await gateway.request("GET", "/v1/providers/health")
      const requests = (id: string) => body.deployments.find((row: any) => row.id === id).requests
      return requests(house!) === 10 && requests(remote!) === 3
    })
    const response = await get(monitoring.key)
    expect(response.status).toBe(200)
    expect(response.body.object).toBe("list")
    expect(response.body.deployments).toBeUndefined()
    // One row per chat model and class its deployments earn; svc/embed is not a chat model.
    expect(response.body.data.map((row: any) => `${row.model} ${row.privacy_class}`)).toEqual([
      "svc/swift standard_route",
      "svc/swift protected_provider_route",
      "svc/swift private_gateway_route",
      "svc/pro standard_route",
      "svc/pro protected_provider_route",
      "svc/pro private_gateway_route"
    ])
    const row = (privacyClass: string) =>
      response.body.data.find((entry: any) => entry.model === "svc/pro" && entry.privacy_class === privacyClass)
    // Both deployments earn standard: the remote one is open after three failures.
    expect(row("standard_route")).toMatchObject({
      availability: 0.5,
      healthy_deployments: 1,
      error_rate: Math.round((3 / 13) * 10_000) / 10_000,
      fallback_rate: 0.2
    })
    nearly(row("standard_route").p50_latency_ms, 50)
    nearly(row("standard_route").p95_latency_ms, 100)
    // Only the sandbox is operator-controlled.
    expect(row("private_gateway_route")).toMatchObject({ availability: 1, healthy_deployments: 1, error_rate: 0 })
    for (const secret of ["house", "remote-secret", "sandbox", "openai", "/0", "127.0.0.1", SECRET_URL, SECRET_UPSTREAM, "upstream"]) {
      expect(response.text).not.toContain(secret)
    }

    const chatOnly = await gateway.account({ scopes: ["chat"] })
    expect((await get(chatOnly.key)).status).toBe(401)
  })

  it("GET /v1/providers/health: operators also get every deployment by name", async () => {
    const { body, status } = await gateway.request("GET", "/v1/providers/health")
    expect(status).toBe(200)
    expect(body.data.length).toBeGreaterThan(0)
    const byId = new Map(body.deployments.map((row: any) => [row.id, row]))
    expect(byId.get("remote-secret/0")).toMatchObject({
      provider: "remote-secret",
      model: "svc/pro",
      upstream_model: SECRET_UPSTREAM,
      state: "open",
      consecutive_failures: 3,
      requests: 3,
      failures: 3,
      error_rate: 1,
      p50_latency_ms: null,
      retry_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/)
    })
    const house: any = byId.get("house/0")
    expect(house).toMatchObject({ provider: "house", upstream_model: "pro", state: "closed", requests: 10, failures: 0 })
    nearly(house.p50_latency_ms, 50)
    // A deployment nothing was measured on yet.
    expect(byId.get("house/9")).toMatchObject({ state: "closed", requests: 0, error_rate: null, p50_latency_ms: null })
  })
})

describe("deployment health across two gateways on one database", () => {
  // A cooldown long enough that a breaker is still open when the other process is asked.
  const shared = { ...config, routing: { health: { ...config.routing.health, cooldownSeconds: 2, maxCooldownSeconds: 4 } } }
  let a: TestGateway | undefined
  let b: TestGateway | undefined
  const both = async () => {
    a ??= await startGateway({ config: shared })
    b ??= await startGateway({ config: shared, database: a.database })
    return { a, b, swift: await deploymentsOf(a, "svc/swift") }
  }
  afterAll(async () => {
    await b?.close()
    await a?.close()
  })

  // PGlite: one process per data directory, so a second gateway cannot open the first one's database.
  it.skipIf(!onPostgres)("what one process learns closes the deployment in the other within a second", async () => {
    const { a, b, swift } = await both()
    const deployment = swift[0]!
    await record(a, failure(deployment), failure(deployment), failure(deployment))
    expect(await admits(a, deployment)).toBe(false)
    const took = await within(1_500, "B sees the breaker open", async () => !(await admits(b, deployment)))
    expect(took).toBeLessThan(1_000)
    expect(await view(b, deployment)).toMatchObject({ state: "open", consecutiveFailures: 3 })
  })

  it.skipIf(!onPostgres)("one probe across both processes; its success closes the breaker for both", async () => {
    const { a, b, swift } = await both()
    const deployment = swift[1]!
    await record(a, failure(deployment), failure(deployment))
    await record(b, failure(deployment))
    await halfOpen(a, deployment)
    await halfOpen(b, deployment)

    const calls = Array.from({ length: 40 }, (_, i) => ({ gateway: i % 2 === 0 ? a : b }))
    const answers = await Promise.all(calls.map(({ gateway }) => admits(gateway, deployment)))
    expect(answers.filter(Boolean)).toHaveLength(1)
    const prober = calls[answers.indexOf(true)]!.gateway

    await record(prober, success(deployment))
    expect(await admits(prober, deployment)).toBe(true)
    const other = prober === a ? b : a
    await within(1_500, "the other process sees it closed", () => admits(other, deployment))
    expect(await view(other, deployment)).toMatchObject({ state: "closed", consecutiveFailures: 0 })
  })

  it.skipIf(!onPostgres)("a Retry-After learned in one process holds the other back", async () => {
    const { a, b, swift } = await both()
    const deployment = swift[2]!
    await record(b, failure(deployment, { status: 429, retryAfterSeconds: 3 }))
    await within(1_500, "A sees the cooldown", async () => (await view(a, deployment)).state === "open")
    expect(await admits(a, deployment)).toBe(false)
  })

  it.skipIf(!onPostgres)("the health endpoint merges both processes' numbers", async () => {
    const { a, b } = await both()
    const [house] = await deploymentsOf(a, "svc/pro")
    await record(a, ...[10, 20, 30, 40].map((latencyMs) => success(house!, { model: "svc/pro", latencyMs })))
    await record(b, ...[50, 60, 70, 80, 90, 100].map((latencyMs) => success(house!, { model: "svc/pro", latencyMs })))
    await record(b, failure(house!, { model: "svc/pro" }))

    // Either process answers with both processes' numbers once each has flushed.
    for (const gateway of [a, b]) {
      await within(5_000, "both processes' stats merged", async () => {
        const { body } = await gateway.request("GET", "/v1/providers/health")
        return body.deployments.find((row: any) => row.id === house).requests === 11
      })
    }
    const { body } = await a.request("GET", "/v1/providers/health")
    const merged = body.deployments.find((row: any) => row.id === house)
    expect(merged).toMatchObject({ requests: 11, failures: 1, consecutive_failures: 1 })
    // Nearest-rank p50 of 10..100 is 50, which neither process measured alone.
    nearly(merged.p50_latency_ms, 50)
    nearly(merged.p95_latency_ms, 100)
    const standard = body.data.find((row: any) => row.model === "svc/pro" && row.privacy_class === "standard_route")
    expect(standard.error_rate).toBe(Math.round((1 / 11) * 10_000) / 10_000)
  })
})
