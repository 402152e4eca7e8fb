/** Wire records of the operator API and the catalogue (snake_case, money as decimal strings). */
import { Schema } from "effect"
import { AccountName, CreditReference } from "../../services/Accounts.ts"
import { Scope } from "../../services/ApiKeys.ts"
import { Message, ToolCall } from "../../services/Chat.ts"
import { Capability, Modality, PrivacyClass } from "../../services/Config.ts"
import { NonNegativeUsd, PositiveUsd } from "../../services/Money.ts"
import { MAX_LIMIT } from "../../services/RateLimiter.ts"

/** A rate limit: a whole number from 1 to 2³¹−1 (what the database holds). */
const Limit = Schema.Int.pipe(Schema.between(1, MAX_LIMIT)).annotations({ description: "1 to 2147483647" })

/** The largest credit accepted at once, in USD: no sum of credits can then outgrow the balance column. */
const MAX_CREDIT_NANOS = BigInt(MAX_LIMIT) * 1_000_000_000n
const notTooMuch = (nanos: bigint) => nanos <= MAX_CREDIT_NANOS || `must be at most ${MAX_LIMIT} USD`

const Usd = Schema.String.annotations({ description: "USD, decimal string with 9 decimal places" })
const Timestamp = Schema.String.annotations({ description: "RFC 3339 UTC" })

export const ModelRecord = Schema.Struct({
  id: Schema.String,
  object: Schema.Literal("model"),
  /** Unix seconds, as OpenAI's model records have it. */
  created: Schema.Int,
  /** Always `svc` unless the operator's config says otherwise: records never name the upstream. */
  owned_by: Schema.String,
  name: Schema.String,
  context_length: Schema.Int,
  pricing: Schema.Struct({
    input: Schema.String,
    output: Schema.optional(Schema.String)
  }).annotations({ description: "USD per one million tokens" }),
  modalities: Schema.Array(Modality),
  capabilities: Schema.Array(Capability),
  supported_parameters: Schema.Array(Schema.String),
  privacy_classes: Schema.Array(PrivacyClass),
  tier: Schema.Literal("swift", "balanced", "pro", "premier", "embed", "third_party")
}).annotations({ identifier: "Model" })

export const ModelList = Schema.Struct({
  object: Schema.Literal("list"),
  data: Schema.Array(ModelRecord)
}).annotations({ identifier: "ModelList" })

export const AccountRecord = Schema.Struct({
  id: Schema.String,
  object: Schema.Literal("account"),
  name: Schema.String,
  balance_usd: Usd,
  reserved_usd: Usd,
  available_usd: Usd,
  created_at: Timestamp
}).annotations({ identifier: "Account" })

export const CreateAccount = Schema.Struct({
  name: AccountName,
  credit_usd: Schema.optional(NonNegativeUsd.pipe(Schema.filter(notTooMuch)))
}).annotations({ identifier: "CreateAccount" })

export const KeyRecord = Schema.Struct({
  id: Schema.String,
  object: Schema.Literal("api_key"),
  account_id: Schema.String,
  name: Schema.NullOr(Schema.String),
  hint: Schema.String,
  scopes: Schema.Array(Scope),
  rpm: Schema.NullOr(Schema.Int),
  tpm: Schema.NullOr(Schema.Int),
  created_at: Timestamp,
  revoked_at: Schema.NullOr(Timestamp)
}).annotations({ identifier: "ApiKey" })

export const CreatedKey = Schema.extend(
  KeyRecord,
  Schema.Struct({ key: Schema.String.annotations({ description: "The secret key; shown only this once" }) })
).annotations({ identifier: "CreatedApiKey" })

export const CreateKey = Schema.Struct({
  name: Schema.optional(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200))),
  scopes: Schema.Array(Scope).pipe(Schema.minItems(1)),
  rpm: Schema.optional(Limit),
  tpm: Schema.optional(Limit)
}).annotations({ identifier: "CreateApiKey" })

/** A change of a key's rate limits: a number sets one, null removes it (the config's default applies), absent keeps it. */
export const UpdateKeyLimits = Schema.Struct({
  rpm: Schema.optional(Schema.NullOr(Limit)),
  tpm: Schema.optional(Schema.NullOr(Limit))
}).annotations({ identifier: "UpdateApiKeyLimits" })

/** An account's own cap on concurrent calls: a number sets it, null removes it (the config's default applies). */
export const SetAccountLimits = Schema.Struct({
  concurrency: Schema.NullOr(Limit)
}).annotations({ identifier: "SetAccountLimits" })

export const AccountLimitsRecord = Schema.Struct({
  object: Schema.Literal("account_limits"),
  account_id: Schema.String,
  concurrency: Schema.NullOr(Schema.Int)
}).annotations({ identifier: "AccountLimits" })

export const LedgerEntryRecord = Schema.Struct({
  id: Schema.String,
  object: Schema.Literal("ledger_entry"),
  account_id: Schema.String,
  kind: Schema.Literal("credit", "charge"),
  amount_usd: Usd,
  reference: Schema.NullOr(Schema.String),
  balance_after_usd: Usd,
  created_at: Timestamp
}).annotations({ identifier: "LedgerEntry" })

export const AddCredits = Schema.Struct({
  amount_usd: PositiveUsd.pipe(Schema.filter(notTooMuch)),
  reference: CreditReference
}).annotations({ identifier: "AddCredits" })

export const ReceiptRecord = Schema.Struct({
  id: Schema.String,
  object: Schema.Literal("receipt"),
  account_id: Schema.String,
  request_id: Schema.String,
  created_at: Timestamp,
  endpoint: Schema.String,
  model: Schema.String,
  route: Schema.Struct({ tier: Schema.String, model: Schema.String }),
  privacy_class: PrivacyClass,
  usage: Schema.Struct({ input_tokens: Schema.Int, output_tokens: Schema.Int }),
  pricing: Schema.Struct({ input_per_mtok_usd: Usd, output_per_mtok_usd: Schema.NullOr(Usd) }),
  cost: Schema.Struct({ upstream_usd: Usd, margin_usd: Usd, total_usd: Usd }),
  reservation: Schema.Struct({ estimated_usd: Usd, reserved_at: Timestamp, settled_at: Timestamp }),
  balance_after_usd: Usd,
  attempts: Schema.Array(Schema.Struct({
    model: Schema.String,
    outcome: Schema.Literal("ok", "error", "timeout"),
    latency_ms: Schema.Int
  })),
  /** Confidential calls: the attestation verdicts the call was served under. */
  attestation_verdict_ids: Schema.optional(Schema.Array(Schema.String)),
  /** A call of several billable steps (an agent run): each step, in order; `cost` is their sum. */
  line_items: Schema.optional(Schema.Array(Schema.Struct({
    step: Schema.Literal("query_embedding", "generation"),
    model: Schema.String,
    usage: Schema.Struct({ input_tokens: Schema.Int, output_tokens: Schema.Int }),
    cost: Schema.Struct({ upstream_usd: Usd, margin_usd: Usd, total_usd: Usd })
  })))
}).annotations({ identifier: "Receipt" })

const Rate = Schema.Number.annotations({ description: "A fraction in [0, 1]" })
const Millis = Schema.NullOr(Schema.Number).annotations({ description: "Milliseconds; null while nothing was measured" })

export const ModelHealthRecord = Schema.Struct({
  model: Schema.String,
  privacy_class: PrivacyClass,
  availability: Rate.annotations({ description: "Share of the model's deployments that earn the class and are not open" }),
  error_rate: Schema.NullOr(Rate),
  p50_latency_ms: Millis,
  p95_latency_ms: Millis,
  fallback_rate: Schema.NullOr(Rate).annotations({
    description: "Share of successful attempts that were a fallback (not the call's first attempt)"
  }),
  healthy_deployments: Schema.Int.annotations({ description: "Deployments earning the class whose breaker is closed" })
}).annotations({ identifier: "ModelHealth" })

/** Operators only: one row per deployment. */
export const DeploymentHealthRecord = Schema.Struct({
  id: Schema.String,
  provider: Schema.String,
  model: Schema.String,
  upstream_model: Schema.String,
  state: Schema.Literal("closed", "open", "half_open"),
  consecutive_failures: Schema.Int,
  requests: Schema.Int,
  failures: Schema.Int,
  error_rate: Schema.NullOr(Rate),
  p50_latency_ms: Millis,
  p95_latency_ms: Millis,
  p50_ttft_ms: Millis,
  tokens_per_second: Schema.NullOr(Schema.Number),
  retry_at: Schema.NullOr(Timestamp)
}).annotations({ identifier: "DeploymentHealth" })

export const ProvidersHealth = Schema.Struct({
  object: Schema.Literal("list"),
  data: Schema.Array(ModelHealthRecord),
  deployments: Schema.optional(Schema.Array(DeploymentHealthRecord)).annotations({
    description: "Present for keys with the admin scope only"
  })
}).annotations({
  identifier: "ProvidersHealth",
  description: "The last five minutes of every gateway process, merged; breaker state as of now"
})

/** `GET /v1/receipts/{id}/transcript`: kept text of a standard-class call (only when prompt storage is on). */
export const TranscriptRecord = Schema.Struct({
  object: Schema.Literal("transcript"),
  receipt_id: Schema.String,
  privacy_class: Schema.Literal("standard_route"),
  created_at: Timestamp,
  expires_at: Timestamp,
  messages: Schema.Array(Message),
  completion: Schema.Struct({
    content: Schema.NullOr(Schema.String),
    tool_calls: Schema.optional(Schema.Array(ToolCall))
  })
}).annotations({ identifier: "Transcript" })
