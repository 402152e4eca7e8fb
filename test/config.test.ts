/** Configuration: decoding rules, and a bad config stopping the process with one line naming the field. */
import { execFile } from "node:child_process"
import { mkdtempSync, writeFileSync } from "node:fs"
import { availableParallelism, tmpdir } from "node:os"
import { join } from "node:path"
import { promisify } from "node:util"
import { Effect, Either, Layer, Redacted } from "effect"
import { describe, expect, it } from "vitest"
import { ConfigChecks } from "../layers/Core.ts"
import { loadConfig, parseConfigFile } from "../layers/platform/ConfigLive.ts"
import { startFailureLine } from "../src/start/failureLines.ts"
import { RouterModesLive } from "../layers/routing/RouterModesLive.ts"
import { AppConfig, type AppConfigShape } from "../services/Config.ts"
import { RouterStrategies } from "../services/Router.ts"

const run = promisify(execFile)

const fieldOf = (json: unknown) =>
  Either.match(parseConfigFile(json), { onLeft: (error) => error.message, onRight: () => "valid" })

const provider = { id: "acme", plugin: "openai-compatible", baseUrl: "http://127.0.0.1:9001/v1", deployments: [] }

/** A provider whose runtime attests with this block (the contract's shape, kind `jwt`, unless overridden). */
const attested = (attestation: Record<string, unknown>) => ({
  ...provider,
  privacy: {
    stores: false,
    logs: false,
    trains: false,
    attestation: {
      url: "http://127.0.0.1:9001/attestation",
      jwksUrl: "http://127.0.0.1:9001/jwks",
      measurements: ["sha384:abc"],
      maxAgeSeconds: 300,
      ...attestation
    }
  }
})

describe("config decoding", () => {
  it("accepts the contract's example shape", () => {
    expect(fieldOf({
      marginFloor: { standard_route: "0.05", confidential_runtime_route: "0.20" },
      models: [{
        id: "svc/acme-large",
        context: 128000,
        pricing: { input: "0.50", output: "1.50" },
        modalities: ["text"],
        capabilities: ["chat", "streaming", "tools"],
        quality: 0.72
      }],
      providers: [{
        ...provider,
        apiKeyEnv: "ACME_API_KEY",
        timeoutMs: 60000,
        privacy: { stores: false, logs: false, trains: false, operatorControlled: false },
        deployments: [{ model: "svc/pro", upstreamModel: "acme-pro-2", cost: { input: "0.40", output: "1.60" } }]
      }]
    })).toBe("valid")
  })

  it.each([
    [{ models: [{ id: "acme", context: 1, pricing: { input: "1" }, modalities: ["text"], capabilities: ["chat"] }] }, "models[0].id"],
    [{ models: [{ id: "svc/a", context: 0, pricing: { input: "1" }, modalities: ["text"], capabilities: ["chat"] }] }, "models[0].context"],
    [{ models: [{ id: "svc/a", context: 5, pricing: { input: 0.5 }, modalities: ["text"], capabilities: ["chat"] }] }, "models[0].pricing.input"],
    [{ models: [{ id: "svc/a", context: 5, pricing: { input: "1" }, modalities: ["text"], capabilities: ["telepathy"] }] }, "models[0].capabilities[0]"],
    [{ providers: [{ ...provider, baseUrl: "ftp://x" }] }, "providers[0].baseUrl"],
    [{ providers: [{ ...provider, timeoutMs: -1 }] }, "providers[0].timeoutMs"],
    [{ providers: [{ ...provider, deployments: [{ model: "svc/pro", cost: { input: "-1" } }] }] }, "providers[0].deployments[0].cost.input"],
    [{ marginFloor: { gold_route: "0.1" } }, "marginFloor.gold_route"],
    [{ limits: { maxBodyBytes: "big" } }, "limits.maxBodyBytes"],
    [{ limits: { defaults: { rpm: 2 ** 31 } } }, "limits.defaults.rpm"],
    [{ limits: { defaults: { tpm: 1.5 } } }, "limits.defaults.tpm"],
    [{ limits: { defaults: { concurrency: 0 } } }, "limits.defaults.concurrency"],
    [{ limits: { permitLeaseSeconds: -1 } }, "limits.permitLeaseSeconds"],
    [{ providers: [attested({ measurements: [] })] }, "providers[0].privacy.attestation.measurements"],
    [{ providers: [attested({ kind: 7 })] }, "providers[0].privacy.attestation.kind"],
    [{ typo: true }, "typo"],
    [{ providers: [{ ...provider, options: "x" }] }, "providers[0].options"]
  ])("rejects %j naming %s", (json, field) => {
    expect(fieldOf(json)).toMatch(new RegExp(`^${field.replace(/[[\].]/g, "\\$&")}: `))
  })

  it("accepts an attestation block without a kind (jwt) and with one", () => {
    expect(fieldOf({ providers: [attested({})] })).toBe("valid")
    expect(fieldOf({ providers: [attested({ kind: "jws-json" })] })).toBe("valid")
  })

  it("reads the environment overrides", async () => {
    const config = await Effect.runPromise(
      loadConfig({ PORT: "9999", HOST: "0.0.0.0", DATABASE_URL: "postgres://x@127.0.0.1/db", SVC_ADMIN_KEY: "k" }, tmpdir())
    )
    expect(config.port).toBe(9999)
    expect(config.host).toBe("0.0.0.0")
    expect(Redacted.value(config.databaseUrl!)).toBe("postgres://x@127.0.0.1/db")
    expect(config.providers.map((entry) => entry.plugin)).toEqual(["sandbox"])
  })

  it.each([
    ["127.0.0.1:38125", "carries a port"],
    ["[::1]:8080", "carries a port"],
    ["localhost:", "carries a port"],
    ["http://example", "is not a host name or address"],
    ["a host", "is not a host name or address"]
  ])("refuses HOST=%j in one line naming HOST", async (host, why) => {
    const error = await Effect.runPromise(Effect.flip(loadConfig({ HOST: host }, tmpdir())))
    expect(error.field).toBe("HOST")
    expect(error.message).toContain(why)
  })

  it.each([["::", "::"], ["[::1]", "::1"], ["0.0.0.0", "0.0.0.0"], ["gateway.internal", "gateway.internal"]])(
    "accepts HOST=%j",
    async (host, listened) => {
      expect((await Effect.runPromise(loadConfig({ HOST: host }, tmpdir()))).host).toBe(listened)
    }
  )

  it("defaults to 127.0.0.1:8080 and the sandbox when nothing is configured", async () => {
    const config = await Effect.runPromise(loadConfig({}, mkdtempSync(join(tmpdir(), "svc-empty-"))))
    expect([config.host, config.port, config.databaseUrl]).toEqual(["127.0.0.1", 8080, undefined])
    expect(config.providers[0]!.deployments.map((deployment) => deployment.model)).toEqual([
      "svc/swift",
      "svc/balanced",
      "svc/pro",
      "svc/premier",
      "svc/embed",
      "svc/sandbox-mini",
      "svc/sandbox-large",
      "svc/sandbox-reasoner"
    ])
    expect(config.models.map((model) => model.id)).toEqual(["svc/sandbox-mini", "svc/sandbox-large", "svc/sandbox-reasoner"])
  })

  it("adds the sandbox's own models only while the built-in sandbox serves, and never over a file's model", async () => {
    const model = { id: "svc/sandbox-mini", context: 1000, pricing: { input: "1" }, modalities: ["text"], capabilities: ["chat"] }
    const dir = mkdtempSync(join(tmpdir(), "svc-models-"))
    writeFileSync(join(dir, "svc.config.json"), JSON.stringify({ models: [model] }))
    const ownModel = await Effect.runPromise(loadConfig({}, dir))
    expect(ownModel.models.map((entry) => [entry.id, entry.context])).toEqual([
      ["svc/sandbox-mini", 1000],
      ["svc/sandbox-large", 300000],
      ["svc/sandbox-reasoner", 200000]
    ])
    writeFileSync(join(dir, "svc.config.json"), JSON.stringify({ providers: [{ id: "s", plugin: "sandbox", deployments: [{ model: "svc/pro" }] }] }))
    expect((await Effect.runPromise(loadConfig({}, dir))).models).toEqual([])
  })

  it("rejects a bad PORT and a missing SVC_CONFIG file", async () => {
    const failure = (env: Record<string, string>) =>
      Effect.runPromise(Effect.flip(loadConfig(env, tmpdir()))).then((error) => error.message)
    expect(await failure({ PORT: "eighty" })).toMatch(/^PORT: /)
    expect(await failure({ SVC_CONFIG: "/nonexistent/svc.json" })).toMatch(/^SVC_CONFIG: no file/)
  })
})

describe("gateway processes (SVC_WORKERS)", () => {
  const workers = (env: Record<string, string>) => Effect.runPromise(loadConfig(env, tmpdir())).then((config) => config.workers)
  const pg = { DATABASE_URL: "postgres://x@127.0.0.1/db" }

  it("are one per core on PostgreSQL, as many as asked, and always one on the embedded database", async () => {
    expect(await workers(pg)).toBe(availableParallelism())
    expect(await workers({ ...pg, SVC_WORKERS: "3" })).toBe(3)
    expect(await workers({ SVC_WORKERS: "3" })).toBe(1)
    expect(await workers({ DATABASE_URL: "", SVC_WORKERS: "3" })).toBe(1)
  })

  it("refuse a count that is not a whole number from 1 to 64, naming the variable", async () => {
    for (const bad of ["0", "-1", "2.5", "many", "65"]) {
      const error = await Effect.runPromise(Effect.flip(loadConfig({ ...pg, SVC_WORKERS: bad }, tmpdir())))
      expect(error.message).toMatch(/^SVC_WORKERS: expected a whole number from 1 to 64/)
    }
  })
})

describe("router mode options (routing.modes)", () => {
  /** Starts the router modes alone with `json` as the config file: "started" or the ConfigInvalid line. */
  const start = (json: unknown) => {
    const file = Either.getOrThrow(parseConfigFile(json))
    const config = { file, providers: [], env: {} } as unknown as AppConfigShape
    return Effect.runPromise(
      Effect.scoped(Layer.build(RouterModesLive.pipe(Layer.provide(Layer.succeed(AppConfig, config))))).pipe(
        Effect.flatMap((context) => Effect.succeed(context.unsafeMap.has(RouterStrategies.key) ? "started" : "no modes")),
        Effect.catchTag("ConfigInvalid", (error) => Effect.succeed(error.message))
      )
    )
  }

  it("accepts each mode's own options, and none", async () => {
    expect(await start({})).toBe("started")
    expect(await start({ routing: { modes: { fast: { maxP95Ratio: 2.5 }, best: { minQuality: 0.6 }, auto: {} } } }))
      .toBe("started")
  })

  it.each([
    [{ fast: { maxP95Ratio: 0.5 } }, /^routing\.modes\.fast\.maxP95Ratio: /],
    [{ fast: { maxP95Ratio: "3" } }, /^routing\.modes\.fast\.maxP95Ratio: /],
    [{ fast: { ratio: 3 } }, /^routing\.modes\.fast\.ratio: /],
    [{ best: { minQuality: 2 } }, /^routing\.modes\.best\.minQuality: /],
    [{ cheapest: { anything: true } }, /^routing\.modes\.cheapest\.anything: /],
    [{ fast: 3 }, /^routing\.modes\.fast: /],
    [{ fastest: {} }, /^routing\.modes\.fastest: unknown router mode "fastest" \(known: .*fast/]
  ])("refuses %j naming the field", async (modes, line) => {
    expect(await start({ routing: { modes } })).toMatch(line)
  })
})

describe("starting with a bad config", () => {
  /** Writes `config` as the config file of a fresh directory; its path and the environment to start with. */
  const configured = (config: string) => {
    const dir = mkdtempSync(join(tmpdir(), "svc-badconfig-"))
    writeFileSync(join(dir, "svc.config.json"), config)
    const env = { SVC_CONFIG: join(dir, "svc.config.json"), SVC_DATA_DIR: join(dir, "data"), PORT: "0", DATABASE_URL: "" }
    return { dir, env }
  }

  /** `npm start` as a process: its exit code and what it printed. */
  const startProcess = async (config: string) => {
    const { env } = configured(config)
    try {
      await run(process.execPath, ["dist/main.js"], { env: { ...process.env, ...env }, timeout: 60_000 })
      return { code: 0, stderr: "" }
    } catch (error: any) {
      return { code: error.code as number, stderr: error.stderr as string }
    }
  }

  /**
   * The same start in this process, as far as a config mistake can get: the config loaded, then
   * everything that judges it (`ConfigChecks`, built before the database opens). The line main prints.
   */
  const startInProcess = (config: string) => {
    const { dir, env } = configured(config)
    return Effect.runPromise(
      loadConfig(env, dir).pipe(
        Effect.flatMap((loaded) => Effect.scoped(Layer.build(ConfigChecks.pipe(Layer.provide(Layer.succeed(AppConfig, loaded)))))),
        Effect.as("started"),
        Effect.catchTag("ConfigInvalid", (error) => Effect.succeed(startFailureLine(error)))
      )
    )
  }

  // Three real processes: a file that is not JSON, a mistake of the schema, one of the plugins'.
  it.each([
    ["{ not json", /^svc: invalid configuration: .*svc\.config\.json: not valid JSON/],
    [JSON.stringify({ routing: { retry: { maxAttempts: 0 } } }), /^svc: invalid configuration: routing\.retry\.maxAttempts: /],
    [
      JSON.stringify({ providers: [{ ...provider, options: { organisation: "org-1" } }] }),
      /^svc: invalid configuration: providers\[0\]\.options\.organisation: /
    ]
  ])("%s → exit 1 and one line", async (config, line) => {
    const { code, stderr } = await startProcess(config)
    expect(code).toBe(1)
    expect(stderr.trim().split("\n")).toHaveLength(1)
    expect(stderr.trim()).toMatch(line)
  }, 60_000)

  it("starts with a good config, so the in-process check can tell", async () => {
    expect(await startInProcess(JSON.stringify({ providers: [{ ...provider, options: { organization: "org-1" } }] })))
      .toBe("started")
  })

  it.each([
    ["{ not json", /^svc: invalid configuration: .*svc\.config\.json: not valid JSON/],
    [JSON.stringify({ providers: [{ ...provider, baseUrl: 42 }] }), /^svc: invalid configuration: providers\[0\]\.baseUrl: /],
    [JSON.stringify({ providers: [{ ...provider, plugin: "nope" }] }), /^svc: invalid configuration: providers\[0\]\.plugin: unknown plugin "nope"/],
    [
      JSON.stringify({ providers: [{ ...provider, deployments: [{ model: "svc/ghost" }] }] }),
      /^svc: invalid configuration: providers\[0\]\.deployments\[0\]\.model: unknown model "svc\/ghost"/
    ],
    [
      JSON.stringify({ providers: [{ ...provider, apiKeyEnv: "SVC_TEST_MISSING_KEY" }] }),
      /^svc: invalid configuration: providers\[0\]\.apiKeyEnv: /
    ],
    [
      JSON.stringify({ providers: [{ ...provider, deployments: [{ model: "svc/pro", weight: -1 }] }] }),
      /^svc: invalid configuration: providers\[0\]\.deployments\[0\]\.weight: /
    ],
    [
      JSON.stringify({ providers: [{ ...provider, options: { organisation: "org-1" } }] }),
      /^svc: invalid configuration: providers\[0\]\.options\.organisation: /
    ],
    [
      JSON.stringify({
        providers: [{ id: "g", plugin: "gemini", options: { safetySettings: [{ category: "HARM_CATEGORY_HARASSMENT", threshold: "BLOCK_SOME" }] }, deployments: [] }]
      }),
      /^svc: invalid configuration: providers\[0\]\.options\.safetySettings\[0\]\.threshold: /
    ],
    [
      JSON.stringify({ providers: [attested({ kind: "tpm-quote" })] }),
      /^svc: invalid configuration: providers\[0\]\.privacy\.attestation\.kind: unknown attestation kind "tpm-quote" \(known: .*jws-json/
    ],
    [
      JSON.stringify({ providers: [attested({ kind: "jws-json", url: "ftp://runtime/attestation" })] }),
      /^svc: invalid configuration: providers\[0\]\.privacy\.attestation\.url: expected an http\(s\) URL/
    ],
    [
      JSON.stringify({ providers: [attested({ jwksUri: "http://127.0.0.1:9001/jwks" })] }),
      /^svc: invalid configuration: providers\[0\]\.privacy\.attestation\.jwksUri: /
    ],
    [JSON.stringify({ routing: { retry: { maxAttempts: 0 } } }), /^svc: invalid configuration: routing\.retry\.maxAttempts: /],
    [JSON.stringify({ routing: { health: { failureThreshold: "3" } } }), /^svc: invalid configuration: routing\.health\.failureThreshold: /],
    [
      JSON.stringify({ routing: { modes: { fast: { maxP95Ratio: 0 } } } }),
      /^svc: invalid configuration: routing\.modes\.fast\.maxP95Ratio: /
    ],
    [JSON.stringify({ promptStorage: { standardRoute: "yes" } }), /^svc: invalid configuration: promptStorage\.standardRoute: /],
    [JSON.stringify({ promptStorage: { retentionDays: 0 } }), /^svc: invalid configuration: promptStorage\.retentionDays: /]
  ])("%s → the start stops with one line naming the field", async (config, line) => {
    expect(await startInProcess(config)).toMatch(line)
  })
})
