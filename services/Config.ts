/**
 * Operator configuration: the JSON config file (CONTRACT.md "Configuration")
 * and the environment overrides, decoded once at start.
 */
import { Context, Data, type Redacted, Schema } from "effect"
import {
  CorsSettings,
  DatabaseSettings,
  databaseDefaults,
  deadlineDefaults,
  DeadlineSettings,
  healthDefaults,
  HealthSettings,
  LimitsConfig,
  limitsDefaults,
  PositiveInt,
  retryDefaults,
  RetrySettings,
  ShutdownSettings,
  AgentSettings,
  MonitoringSettings,
  monitoringDefaults,
  LEGACY_AGENT_CHAT_SUNSET
} from "./Settings.ts"

export { DatabaseSettings, DeadlineSettings, HealthSettings, RetrySettings } from "./Settings.ts"

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
  quality: Schema.optional(Schema.Number.pipe(Schema.between(0, 1))),
  /** Shown as the model record's `created` (unix seconds); default: the catalogue's epoch. */
  created: Schema.optional(Schema.Int.pipe(Schema.nonNegative())),
  /** Shown as the model record's `owned_by`; default `svc` (the record never names the upstream). */
  ownedBy: Schema.optional(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(64)))
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
  limits: Schema.optionalWith(LimitsConfig, { default: () => limitsDefaults }),
  cors: Schema.optionalWith(CorsSettings, { default: () => ({ origins: [] }) }),
  shutdown: Schema.optionalWith(ShutdownSettings, { default: () => ({ drainSeconds: 25 }) }),
  agents: Schema.optionalWith(AgentSettings, { default: () => ({ legacyChatSunset: LEGACY_AGENT_CHAT_SUNSET }) }),
  monitoring: Schema.optionalWith(MonitoringSettings, { default: () => monitoringDefaults })
})
export type ConfigFile = typeof ConfigFile.Type

/** The whole configuration the gateway runs with. */
export interface AppConfigShape {
  readonly file: ConfigFile
  /** Providers in force: the file's, or the built-in sandbox when the file names none. */
  readonly providers: ReadonlyArray<ProviderConfig>
  /** Third-party models in force: the file's, then the sandbox's own when the built-in sandbox serves. */
  readonly models: ReadonlyArray<ModelConfig>
  readonly host: string
  readonly port: number
  /** Real PostgreSQL when set; otherwise the embedded database in `dataDir`. */
  readonly databaseUrl: Redacted.Redacted<string> | undefined
  readonly dataDir: string
  readonly redisUrl: Redacted.Redacted<string> | undefined
  readonly adminKey: Redacted.Redacted<string> | undefined
  /**
   * Gateway processes `npm start` runs (src/start/workers.ts): `SVC_WORKERS`, else one per core on
   * PostgreSQL; always one on the embedded database, which one process owns.
   */
  readonly workers: number
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
