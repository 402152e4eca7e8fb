/**
 * Reads the config file (`SVC_CONFIG`, else `./svc.config.json` if present,
 * else the built-in default) and the environment, and decodes them once.
 * Any problem is a `ConfigInvalid` naming the field.
 */
import { existsSync, readFileSync } from "node:fs"
import { availableParallelism } from "node:os"
import { resolve } from "node:path"
import { Effect, Either, Layer, ParseResult, Redacted, Schema } from "effect"
import { AppConfig, type AppConfigShape, ConfigFile, ConfigInvalid, type ModelConfig, type ProviderConfig } from "../../services/Config.ts"
import { fieldPath } from "../../services/fieldPath.ts"
import { quote } from "../../services/quote.ts"
import { houseModels } from "../catalogue/houseModels.ts"
import { sandboxModels } from "../catalogue/sandboxModels.ts"

type Env = Readonly<Record<string, string | undefined>>

/** With no providers configured, the offline sandbox serves every house model and its own third-party-style models. */
const sandboxDefault: ProviderConfig = {
  id: "sandbox",
  plugin: "sandbox",
  timeoutMs: 60_000,
  deployments: [...houseModels, ...sandboxModels].map((model) => ({ model: model.id, weight: 1 }))
}

/** The file's models, then the sandbox's own when it serves by default (unless the file defines one of their ids). */
const modelsInForce = (file: ConfigFile): ReadonlyArray<ModelConfig> => {
  if (file.providers !== undefined) return file.models
  const defined = new Set(file.models.map((model) => model.id))
  return [...file.models, ...sandboxModels.filter((model) => !defined.has(model.id))]
}

const decodeFile = Schema.decodeUnknownEither(ConfigFile, { errors: "first", onExcessProperty: "error" })

/** Decodes a parsed config file; the first problem becomes a one-line error. */
export const parseConfigFile = (json: unknown): Either.Either<ConfigFile, ConfigInvalid> =>
  Either.mapLeft(decodeFile(json), (error) => {
    const [issue] = ParseResult.ArrayFormatter.formatErrorSync(error)
    return new ConfigInvalid({ field: fieldPath(issue?.path ?? []) || "(root)", reason: issue?.message ?? "invalid" })
  })

const readFile = (path: string) =>
  Effect.try({
    try: () => JSON.parse(readFileSync(path, "utf8")) as unknown,
    catch: (error) =>
      new ConfigInvalid({
        field: path,
        reason: error instanceof SyntaxError ? `not valid JSON (${error.message})` : "cannot be read"
      })
  })

const portOf = (text: string | undefined) => {
  if (text === undefined || text === "") return Either.right(8080)
  const port = Number(text)
  return Number.isInteger(port) && port >= 0 && port <= 65535
    ? Either.right(port)
    : Either.left(new ConfigInvalid({ field: "PORT", reason: `expected a port number, got "${text}"` }))
}

/**
 * `HOST` is an address or a name to listen on, without a port: `127.0.0.1:9000` (or `[::1]:9000`)
 * would otherwise be looked up as a host name and fail with a resolver error.
 */
const hostOf = (text: string | undefined) => {
  if (text === undefined || text === "") return Either.right("127.0.0.1")
  const withPort = /^\[[^\]]*\]:\d+$/.test(text) || /^[^:]+:\d*$/.test(text)
  if (withPort) return Either.left(new ConfigInvalid({ field: "HOST", reason: `"${quote(text)}" carries a port; set the address in HOST and the port in PORT` }))
  if (/[\s/@?#]/.test(text) || text.length > 253) return Either.left(new ConfigInvalid({ field: "HOST", reason: `"${quote(text)}" is not a host name or address` }))
  return Either.right(text.startsWith("[") && text.endsWith("]") ? text.slice(1, -1) : text)
}

/** Most processes `SVC_WORKERS` may ask for: beyond a few per core they only add memory. */
const MAX_WORKERS = 64

const workersOf = (text: string | undefined, shared: boolean) => {
  if (!shared) return Either.right(1)
  if (text === undefined || text === "") return Either.right(availableParallelism())
  const workers = Number(text)
  return Number.isInteger(workers) && workers >= 1 && workers <= MAX_WORKERS
    ? Either.right(workers)
    : Either.left(new ConfigInvalid({ field: "SVC_WORKERS", reason: `expected a whole number from 1 to ${MAX_WORKERS}, got "${quote(text)}"` }))
}

const secret = (value: string | undefined) => value === undefined || value === "" ? undefined : Redacted.make(value)

/** The configuration from a file path (or none) and an environment. */
export const loadConfig = (env: Env, cwd = process.cwd()): Effect.Effect<AppConfigShape, ConfigInvalid> =>
  Effect.gen(function*() {
    const explicit = env.SVC_CONFIG !== undefined && env.SVC_CONFIG !== ""
    const path = resolve(cwd, explicit ? env.SVC_CONFIG! : "svc.config.json")
    if (explicit && !existsSync(path)) {
      return yield* new ConfigInvalid({ field: "SVC_CONFIG", reason: `no file at ${path}` })
    }
    const file = existsSync(path) ? yield* Effect.flatMap(readFile(path), parseConfigFile) : yield* parseConfigFile({})
    const host = yield* hostOf(env.HOST)
    const port = yield* portOf(env.PORT)
    const workers = yield* workersOf(env.SVC_WORKERS, env.DATABASE_URL !== undefined && env.DATABASE_URL !== "")
    return {
      file,
      providers: file.providers ?? [sandboxDefault],
      models: modelsInForce(file),
      host,
      port,
      databaseUrl: secret(env.DATABASE_URL),
      dataDir: resolve(cwd, env.SVC_DATA_DIR || ".svc-data"),
      redisUrl: secret(env.REDIS_URL),
      adminKey: secret(env.SVC_ADMIN_KEY),
      workers,
      env
    }
  })

export const ConfigLive = Layer.effect(AppConfig, loadConfig(process.env))
