/**
 * The errors an API caller can see. Each class owns its HTTP status and default
 * `code`; on the wire every one of them is the contract's envelope
 * `{"error":{"code","message","param","request_id"}}`.
 */
import { HttpApiSchema } from "@effect/platform"
import { Effect, FiberRef, ParseResult, Schema } from "effect"
import { globalValue } from "effect/GlobalValue"

/** The id of the request being served (`req_...`); read when an error is encoded. */
export const currentRequestId = globalValue(
  "svc/currentRequestId",
  () => FiberRef.unsafeMake<string | null>(null)
)

const fields = (defaultCode: string) => ({
  code: Schema.optionalWith(Schema.String, { default: () => defaultCode }),
  message: Schema.String,
  param: Schema.optionalWith(Schema.NullOr(Schema.String), { default: () => null })
})

/** 400: malformed JSON, schema violation, unknown model, over-long input. */
export class InvalidRequest extends Schema.TaggedError<InvalidRequest>()("InvalidRequest", fields("invalid_request")) {}
/** 401: key missing, unknown, revoked or lacking the endpoint's scope. */
export class Unauthorized extends Schema.TaggedError<Unauthorized>()("Unauthorized", fields("unauthorized")) {}
/** 402: the balance cannot cover the reserved estimate of the call. */
export class InsufficientFunds extends Schema.TaggedError<InsufficientFunds>()(
  "InsufficientFunds",
  fields("insufficient_funds")
) {}
/** 403: a key uses a selector it may not use. */
export class Forbidden extends Schema.TaggedError<Forbidden>()("Forbidden", fields("forbidden")) {}
/** 404: unknown id, or an id of another account. */
export class NotFound extends Schema.TaggedError<NotFound>()("NotFound", fields("not_found")) {}
/** 409: a reused idempotency reference or key with different content. */
export class Conflict extends Schema.TaggedError<Conflict>()("Conflict", fields("idempotency_conflict")) {}
/** 413: request body over the configured limit. */
export class PayloadTooLarge extends Schema.TaggedError<PayloadTooLarge>()(
  "PayloadTooLarge",
  fields("payload_too_large")
) {}
/** 422: the privacy class asked for cannot be earned by the model (and no fallback to a lower one was allowed). */
export class PrivacyUnavailable extends Schema.TaggedError<PrivacyUnavailable>()(
  "PrivacyUnavailable",
  fields("privacy_class_unavailable_for_model")
) {}
/** 500: a fault of ours; the message never carries internals. */
export class InternalError extends Schema.TaggedError<InternalError>()("InternalError", fields("internal_error")) {}
/** 503: no route may serve the call now (e.g. `margin_floor_violated`). */
export class ServiceUnavailable extends Schema.TaggedError<ServiceUnavailable>()(
  "ServiceUnavailable",
  {
    ...fields("service_unavailable"),
    /** Sent as the `Retry-After` header when set (not part of the body). */
    retryAfterSeconds: Schema.optional(Schema.Int)
  }
) {}
/** 502: every eligible route failed. */
export class UpstreamError extends Schema.TaggedError<UpstreamError>()("UpstreamError", fields("upstream_error")) {}
/** 504: every eligible route timed out. */
export class UpstreamTimeout extends Schema.TaggedError<UpstreamTimeout>()(
  "UpstreamTimeout",
  fields("upstream_timeout")
) {}

/** Any error a caller can see. */
export type ApiError =
  | InvalidRequest
  | Unauthorized
  | InsufficientFunds
  | Forbidden
  | NotFound
  | Conflict
  | PayloadTooLarge
  | PrivacyUnavailable
  | InternalError
  | UpstreamError
  | ServiceUnavailable
  | UpstreamTimeout

/** The wire envelope shared by every error status. */
export const ErrorEnvelope = Schema.Struct({
  error: Schema.Struct({
    code: Schema.String,
    message: Schema.String,
    param: Schema.NullOr(Schema.String),
    request_id: Schema.NullOr(Schema.String)
  })
}).annotations({ identifier: "ErrorEnvelope" })

/** What each error means, for the API document. */
const descriptions: Record<ApiError["_tag"], string> = {
  InvalidRequest: "The request is malformed, does not match the schema, or names an unknown model",
  Unauthorized: "The API key is missing, unknown, revoked, or lacks the endpoint's scope",
  InsufficientFunds: "The credit balance cannot cover the reserved estimate of the call",
  Forbidden: "The key may not use this selector",
  NotFound: "No such resource for this account",
  Conflict: "The idempotency reference or key was used before with different content",
  PayloadTooLarge: "The request body is over the configured limit",
  PrivacyUnavailable: "The requested privacy class cannot be earned by the model, and falling back to a lower class was not allowed",
  InternalError: "A fault on our side",
  UpstreamError: "Every eligible route failed",
  ServiceUnavailable: "No route may serve the call now: below the margin floor, or its runtime is unavailable",
  UpstreamTimeout: "Every eligible route timed out"
}

/** HTTP status of each error class. */
const statuses = {
  InvalidRequest: 400,
  Unauthorized: 401,
  InsufficientFunds: 402,
  Forbidden: 403,
  NotFound: 404,
  Conflict: 409,
  PayloadTooLarge: 413,
  PrivacyUnavailable: 422,
  InternalError: 500,
  UpstreamError: 502,
  ServiceUnavailable: 503,
  UpstreamTimeout: 504
} as const satisfies Record<ApiError["_tag"], number>

/** Whether a value is one of the errors above. */
export const isApiError = (value: unknown): value is ApiError =>
  value instanceof Error && "_tag" in value && typeof value._tag === "string" && Object.hasOwn(statuses, value._tag)

/** HTTP status of an error a caller can see. */
export const statusOf = (error: ApiError): number => statuses[error._tag]

// The envelope is the encoded side and the error class the decoded side; the
// request id is read from the fiber while the error is encoded.
const onTheWire = <A extends ApiError>(errorClass: Schema.Schema<A, any> & { readonly _tag: A["_tag"] }) =>
  Schema.transformOrFail(ErrorEnvelope, errorClass as Schema.Schema<A, any>, {
    strict: false,
    decode: ({ error }) =>
      ParseResult.succeed({ _tag: errorClass._tag, code: error.code, message: error.message, param: error.param }),
    encode: (error: any) =>
      Effect.map(FiberRef.get(currentRequestId), (request_id) => ({
        error: { code: error.code, message: error.message, param: error.param ?? null, request_id }
      }))
  }).annotations({
    ...HttpApiSchema.annotations({ status: statuses[errorClass._tag] }),
    description: descriptions[errorClass._tag]
  }) as any as Schema.Schema<A, unknown>

/** Wire schemas of the errors, for HttpApi declarations. */
export const Wire = {
  InvalidRequest: onTheWire(InvalidRequest),
  Unauthorized: onTheWire(Unauthorized),
  InsufficientFunds: onTheWire(InsufficientFunds),
  Forbidden: onTheWire(Forbidden),
  NotFound: onTheWire(NotFound),
  Conflict: onTheWire(Conflict),
  PayloadTooLarge: onTheWire(PayloadTooLarge),
  PrivacyUnavailable: onTheWire(PrivacyUnavailable),
  InternalError: onTheWire(InternalError),
  UpstreamError: onTheWire(UpstreamError),
  ServiceUnavailable: onTheWire(ServiceUnavailable),
  UpstreamTimeout: onTheWire(UpstreamTimeout)
}
