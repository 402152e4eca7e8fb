/**
 * Reads the config file (`SVC_CONFIG`, else `./svc.config.json` if present,
 * else the built-in default) and the environment, and decodes them once.
 * Any problem is a `ConfigInvalid` naming the field.
 */
import { existsSync, readFileSync } from "node:fs"
import { resolve } from "node:path"
import { Effect, Either, Layer, ParseResult, Redacted, Schema } from "effect"
import { AppConfig, type AppConfigShape, ConfigFile, ConfigInvalid, type ProviderConfig } from "../../services/Config.ts"
import { fieldPath } from "../../services/fieldPath.ts"
import { houseModels } from "../catalogue/houseModels.ts"

type Env = Readonly<Record<string, string | undefined>>

/** With no providers configured, the offline sandbox serves every house model. */
const sandboxDefault: ProviderConfig = {
  id: "sandbox",
  plugin: "sandbox",
  timeoutMs: 60_000,
  deployments: houseModels.map((model) => ({ model: model.id, weight: 1 }))
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
    const port = yield* portOf(env.PORT)
    return {
      file,
      providers: file.providers ?? [sandboxDefault],
      host: env.HOST || "127.0.0.1",
      port,
      databaseUrl: secret(env.DATABASE_URL),
      dataDir: resolve(cwd, env.SVC_DATA_DIR || ".svc-data"),
      redisUrl: secret(env.REDIS_URL),
      adminKey: secret(env.SVC_ADMIN_KEY),
      env
    }
  })

export const ConfigLive = Layer.effect(AppConfig, loadConfig(process.env))
