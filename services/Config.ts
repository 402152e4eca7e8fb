/**
 * Operator configuration: the JSON config file (CONTRACT.md "Configuration")
 * and the environment overrides, decoded once at start.
 */
import { Context, Data, type Redacted, Schema } from "effect"

/** Privacy classes, weakest to strongest. */
export const PrivacyClass = Schema.Literal(
  "standard_route",
  "protected_provider_route",
  "private_gateway_route",
  "confidential_runtime_route"
)
export type PrivacyClass = typeof PrivacyClass.Type

/** The spec's capability vocabulary (2.5), snake_cased. */
export const Capability = Schema.Literal(
  "chat",
  "streaming",
  "tools",
  "structured_output",
  "vision",
  "reasoning",
  "web_search",
  "embeddings"
)
export type Capability = typeof Capability.Type

export const Modality = Schema.Literal("text", "image")
export type Modality = typeof Modality.Type

/** A decimal string such as `"0.50"`; parsed into exact money where it is used. */
const Decimal = Schema.String.pipe(
  Schema.pattern(/^\d{1,18}(\.\d{1,9})?$/, {
    message: () => "expected a non-negative decimal string with at most 9 decimal places, e.g. \"0.50\""
  })
)

const PositiveInt = Schema.Int.pipe(Schema.positive())

/** USD per one million tokens. */
export const TokenPrices = Schema.Struct({
  input: Decimal,
  output: Schema.optional(Decimal)
})

export const ModelConfig = Schema.Struct({
  id: Schema.String.pipe(
    Schema.pattern(/^svc\/[A-Za-z0-9][A-Za-z0-9._:\-/]*$/, { message: () => "model ids look like svc/<name>" })
  ),
  name: Schema.optional(Schema.String),
  context: PositiveInt,
  pricing: TokenPrices,
  modalities: Schema.Array(Modality).pipe(Schema.minItems(1)),
  capabilities: Schema.Array(Capability).pipe(Schema.minItems(1)),
  supported_parameters: Schema.optional(Schema.Array(Schema.String)),
  /** Embedding models: the longest vector it makes, so the largest `dimensions` a caller may ask for. */
  dimensions: Schema.optional(PositiveInt),
  /** Quality score in [0, 1], used by router modes. */
  quality: Schema.optional(Schema.Number.pipe(Schema.between(0, 1)))
})
export type ModelConfig = typeof ModelConfig.Type

/** What every kind of attestation block holds; no `kind` means `"jwt"`. */
export const AttestationCommon = Schema.Struct({
  kind: Schema.optional(Schema.String),
  measurements: Schema.Array(Schema.String).pipe(Schema.minItems(1)),
  maxAgeSeconds: PositiveInt
})

/**
 * A provider's `privacy.attestation`: the common fields, plus the options of
 * its kind (`url`, `jwksUrl`, …), decoded at start by that kind's verifier
 * (services/Attestation.ts), which also refuses fields it does not know.
 */
export const Attestation = Schema.Struct(
  AttestationCommon.fields,
  Schema.Record({ key: Schema.String, value: Schema.Unknown })
)

/** What the upstream promises about prompts; an omitted answer counts as the weak one. */
export const ProviderPrivacy = Schema.Struct({
  stores: Schema.optionalWith(Schema.Boolean, { default: () => true }),
  logs: Schema.optionalWith(Schema.Boolean, { default: () => true }),
  trains: Schema.optionalWith(Schema.Boolean, { default: () => true }),
  operatorControlled: Schema.optionalWith(Schema.Boolean, { default: () => false }),
  attestation: Schema.optional(Attestation)
})
export type ProviderPrivacy = typeof ProviderPrivacy.Type

export const DeploymentConfig = Schema.Struct({
  model: Schema.String,
  /** The model name the upstream knows; defaults to the catalogue id without `svc/`. */
  upstreamModel: Schema.optional(Schema.String),
  /** What the upstream charges, USD per one million tokens. */
  cost: Schema.optional(TokenPrices),
  /** Share of traffic among equally good deployments of the model. */
  weight: Schema.optionalWith(Schema.Number.pipe(Schema.positive(), Schema.finite()), { default: () => 1 })
})
export type DeploymentConfig = typeof DeploymentConfig.Type

export const ProviderConfig = Schema.Struct({
  id: Schema.String.pipe(Schema.pattern(/^[A-Za-z0-9][A-Za-z0-9_-]*$/, { message: () => "letters, digits, - and _" })),
  plugin: Schema.String,
  baseUrl: Schema.optional(Schema.String.pipe(Schema.pattern(/^https?:\/\//, { message: () => "expected an http(s) URL" }))),
  apiKeyEnv: Schema.optional(Schema.String),
  /** One attempt, from connecting to its last byte (a stream's too); `routing.deadline` bounds the whole call. */
  timeoutMs: Schema.optionalWith(PositiveInt, { default: () => 60_000 }),
  privacy: Schema.optional(ProviderPrivacy),
  /** The plugin's own settings, decoded with the plugin's options schema when its adapter is made. */
  options: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Unknown })),
  deployments: Schema.Array(DeploymentConfig)
})
export type ProviderConfig = typeof ProviderConfig.Type

/** Deployment health and its circuit breaker (layers/health/HealthPg.ts). */
export const HealthSettings = Schema.Struct({
  /** Consecutive failures of a deployment that open its breaker. */
  failureThreshold: Schema.optionalWith(PositiveInt, { default: () => 3 }),
  /** How long an opened breaker keeps the deployment out before one probe call may try it. */
  cooldownSeconds: Schema.optionalWith(PositiveInt, { default: () => 30 }),
  /** The cooldown doubles with every failed probe, up to this. */
  maxCooldownSeconds: Schema.optionalWith(PositiveInt, { default: () => 300 }),
  /** How often each process re-reads the shared breaker table (what other processes learned). */
  syncMillis: Schema.optionalWith(PositiveInt, { default: () => 1000 }),
  /** How often each process writes its windowed numbers to the shared stats table. */
  statsFlushMillis: Schema.optionalWith(PositiveInt, { default: () => 5000 })
})
export type HealthSettings = typeof HealthSettings.Type

const healthDefaults: HealthSettings = {
  failureThreshold: 3,
  cooldownSeconds: 30,
  maxCooldownSeconds: 300,
  syncMillis: 1000,
  statsFlushMillis: 5000
}

/** Retries of a call across its routes (layers/routing/failover.ts). */
export const RetrySettings = Schema.Struct({
  /** Attempts per call, over all its routes. */
  maxAttempts: Schema.optionalWith(PositiveInt, { default: () => 4 }),
  /** Backoff before a route is tried again: this, doubling per round, jittered. */
  backoffBaseMs: Schema.optionalWith(PositiveInt, { default: () => 100 }),
  backoffCapMs: Schema.optionalWith(PositiveInt, { default: () => 2000 }),
  /** A `Retry-After` up to this long is waited for; a longer one leaves the route out of the call. */
  maxRetryWaitMs: Schema.optionalWith(PositiveInt, { default: () => 2000 })
})
export type RetrySettings = typeof RetrySettings.Type

const retryDefaults: RetrySettings = { maxAttempts: 4, backoffBaseMs: 100, backoffCapMs: 2000, maxRetryWaitMs: 2000 }

/** The connection to PostgreSQL and what an outage costs (layers/storage/Database.ts, DatabaseStatusLive.ts). */
export const DatabaseSettings = Schema.Struct({
  /** Longest wait for a new connection; then the request is answered 503. */
  connectTimeoutMs: Schema.optionalWith(PositiveInt, { default: () => 5000 }),
  /** Longest a statement may run (the server's `statement_timeout`; the driver gives up 1 s later). */
  statementTimeoutMs: Schema.optionalWith(PositiveInt, { default: () => 15_000 }),
  /** An idle pooled connection is closed after this. */
  idleTimeoutMs: Schema.optionalWith(PositiveInt, { default: () => 30_000 }),
  /** Connections per gateway process. */
  poolSize: Schema.optionalWith(PositiveInt, { default: () => 10 }),
  /** How long a start waits for an unreachable database before giving up; 0 waits forever. */
  startupWaitSeconds: Schema.optionalWith(Schema.Int.pipe(Schema.nonNegative()), { default: () => 300 }),
  /** `Retry-After` of the 503 answered while the database cannot be reached. */
  retryAfterSeconds: Schema.optionalWith(PositiveInt, { default: () => 5 }),
  /** How often an unreachable database is asked again (and kept settlements retried). */
  probeIntervalMs: Schema.optionalWith(PositiveInt, { default: () => 1000 })
})
export type DatabaseSettings = typeof DatabaseSettings.Type

const databaseDefaults: DatabaseSettings = {
  connectTimeoutMs: 5000,
  statementTimeoutMs: 15_000,
  idleTimeoutMs: 30_000,
  poolSize: 10,
  startupWaitSeconds: 300,
  retryAfterSeconds: 5,
  probeIntervalMs: 1000
}
/**
 * How long a call may take (layers/upstream/deadline.ts). Each attempt is also bounded, from
 * connecting to its last byte, by its provider's `timeoutMs`.
 */
export const DeadlineSettings = Schema.Struct({
  /** The whole call, over all its attempts and backoffs, streaming included. */
  callMs: Schema.optionalWith(PositiveInt, { default: () => 300_000 }),
  /** A stream that delivers nothing for this long after its first chunk is cut off. */
  streamIdleMs: Schema.optionalWith(PositiveInt, { default: () => 30_000 })
})
export type DeadlineSettings = typeof DeadlineSettings.Type

const deadlineDefaults: DeadlineSettings = { callMs: 300_000, streamIdleMs: 30_000 }

/** A limit: a whole number from 1 to 2³¹−1. */
const LimitValue = PositiveInt.pipe(Schema.lessThanOrEqualTo(2_147_483_647))

/** Limits that apply where a key (rpm, tpm) or account (concurrency) sets none; absent = unlimited. */
const RateLimitDefaults = Schema.Struct({
  rpm: Schema.optional(LimitValue),
  tpm: Schema.optional(LimitValue),
  concurrency: Schema.optional(LimitValue)
})

/** What a request body may be, checked before anything else reads it (README "Input limits"). */
const LimitsConfig = Schema.Struct({
  /** Largest accepted request body. */
  maxBodyBytes: Schema.optionalWith(PositiveInt, { default: () => 20 * 1024 * 1024 }),
  /** Deepest nesting of arrays and objects in a JSON body (at most 1000: deeper values overflow the stack elsewhere). */
  maxJsonDepth: Schema.optionalWith(Schema.Int.pipe(Schema.between(1, 1000)), { default: () => 64 }),
  /** Most items in any one array of a JSON body. */
  maxArrayItems: Schema.optionalWith(PositiveInt, { default: () => 10_000 }),
  /** Rate limits of keys that set none (`rpm`, `tpm`), and every account's cap on concurrent calls. */
  defaults: Schema.optionalWith(RateLimitDefaults, { default: () => ({}) }),
  /** How long a concurrency permit outlives a process that died holding it (renewed while its call runs). */
  permitLeaseSeconds: Schema.optionalWith(PositiveInt, { default: () => 30 }),
  /** Where the counts live in Redis (`REDIS_URL`): every key starts with this, so installs can share a server. */
  redisKeyPrefix: Schema.optionalWith(Schema.String, { default: () => "svc:rl:" })
})
const limitsDefaults = {
  maxBodyBytes: 20 * 1024 * 1024,
  maxJsonDepth: 64,
  maxArrayItems: 10_000,
  defaults: {},
  permitLeaseSeconds: 30,
  redisKeyPrefix: "svc:rl:"
}

/** The config file. */
export const ConfigFile = Schema.Struct({
  marginFloor: Schema.optional(Schema.partial(Schema.Record({ key: PrivacyClass, value: Decimal }))),
  models: Schema.optionalWith(Schema.Array(ModelConfig), { default: () => [] }),
  providers: Schema.optional(Schema.Array(ProviderConfig)),
  billing: Schema.optionalWith(
    Schema.Struct({
      /** How long a reservation may stay open; after that the sweeper releases it (its process died). */
      reservationLeaseSeconds: Schema.optionalWith(PositiveInt, { default: () => 900 }),
      /** How often expired reservations are looked for. */
      sweepIntervalSeconds: Schema.optionalWith(PositiveInt, { default: () => 30 })
    }),
    { default: () => ({ reservationLeaseSeconds: 900, sweepIntervalSeconds: 30 }) }
  ),
  routing: Schema.optionalWith(
    Schema.Struct({
      health: Schema.optionalWith(HealthSettings, { default: () => healthDefaults }),
      retry: Schema.optionalWith(RetrySettings, { default: () => retryDefaults }),
      deadline: Schema.optionalWith(DeadlineSettings, { default: () => deadlineDefaults }),
      /**
       * Options of each router mode, by mode name (`{"fast": {"maxP95Ratio": 2.5}}`); each mode decodes
       * its own at start (services/Router.ts `registerStrategy`), and an unknown mode name stops the start.
       */
      modes: Schema.optionalWith(Schema.Record({ key: Schema.String, value: Schema.Unknown }), { default: () => ({}) })
    }),
    { default: () => ({ health: healthDefaults, retry: retryDefaults, deadline: deadlineDefaults, modes: {} }) }
  ),
  promptStorage: Schema.optionalWith(
    Schema.Struct({
      /**
       * Keep the prompt and completion text of chat calls served at `standard_route`, for the
       * account to read back. Off by default; never done for any stronger class.
       */
      standardRoute: Schema.optionalWith(Schema.Boolean, { default: () => false }),
      /** How long kept text stays before it is deleted. */
      retentionDays: Schema.optionalWith(PositiveInt, { default: () => 30 })
    }),
    { default: () => ({ standardRoute: false, retentionDays: 30 }) }
  ),
  database: Schema.optionalWith(DatabaseSettings, { default: () => databaseDefaults }),
  limits: Schema.optionalWith(LimitsConfig, { default: () => limitsDefaults })
})
export type ConfigFile = typeof ConfigFile.Type

/** The whole configuration the gateway runs with. */
export interface AppConfigShape {
  readonly file: ConfigFile
  /** Providers in force: the file's, or the built-in sandbox when the file names none. */
  readonly providers: ReadonlyArray<ProviderConfig>
  readonly host: string
  readonly port: number
  /** Real PostgreSQL when set; otherwise the embedded database in `dataDir`. */
  readonly databaseUrl: Redacted.Redacted<string> | undefined
  readonly dataDir: string
  readonly redisUrl: Redacted.Redacted<string> | undefined
  readonly adminKey: Redacted.Redacted<string> | undefined
  /** Where values of `apiKeyEnv` are looked up. */
  readonly env: Readonly<Record<string, string | undefined>>
}

export class AppConfig extends Context.Tag("svc/AppConfig")<AppConfig, AppConfigShape>() {}

/** A configuration the gateway refuses to start with; `field` is a path such as `providers[0].baseUrl`. */
export class ConfigInvalid extends Data.TaggedError("ConfigInvalid")<{
  readonly field: string
  readonly reason: string
}> {
  get message() {
    return `${this.field}: ${this.reason}`
  }
}
