/**
 * Provider plugins and the adapters they make. An adapter speaks one upstream
 * wire format and translates to and from the neutral shapes in Chat.ts (and
 * Embeddings.ts); its failures are `UpstreamFailure`s (never the upstream's
 * own error types), or `RequestNotTranslatable` for a request it cannot express.
 */
import { Context, Data, type Effect, type Scope, type Stream } from "effect"
import type { ChatChunk, ChatCompletion, ChatRequest } from "./Chat.ts"
import type { ProviderConfig } from "./Config.ts"
import type { EmbedCall, EmbedResult } from "./Embeddings.ts"
import { type Plugin, registerIn, type Registry } from "./Registry.ts"

/** Why an upstream call failed. `detail` is for operators' logs only: it may name the upstream. */
export class UpstreamFailure extends Data.TaggedError("UpstreamFailure")<{
  readonly kind: "timeout" | "connection" | "status" | "protocol"
  /** Upstream HTTP status, when it answered with one. */
  readonly status?: number
  /** The upstream's `Retry-After`, in seconds, when it sent one (429, 503). */
  readonly retryAfterSeconds?: number
  readonly detail: string
}> {}

/**
 * The plugin cannot express this request in its upstream's wire format (a
 * content part, a tool choice or a field it has no translation for): nothing
 * was sent, and the deployment is not to blame. `reason` is shown to the caller,
 * so it names request fields, never prompt text.
 */
export class RequestNotTranslatable extends Data.TaggedError("RequestNotTranslatable")<{
  readonly reason: string
}> {}

/** What an adapter call can fail with. */
export type AdapterFailure = UpstreamFailure | RequestNotTranslatable

/** A provider entry of the config that its plugin cannot work with. */
export class ProviderConfigError extends Data.TaggedError("ProviderConfigError")<{
  /** Field path inside the provider entry, e.g. `baseUrl`. */
  readonly field: string
  readonly reason: string
}> {}

/** An attempt that did not end in time (`what` ran out), as a failure. */
export const timedOut = (what: string, ms: number) =>
  new UpstreamFailure({ kind: "timeout", detail: `${what} (${Math.max(0, Math.round(ms))} ms)` })

/**
 * When an attempt must be over (epoch ms, live clock), and how long a stream may wait for its next
 * content once some came. Only time spent waiting on the upstream counts; keep-alives are not content.
 */
export interface AttemptDeadline {
  readonly endAt: number
  readonly streamIdleMs: number
}

/** One call to an upstream: the caller's request and the upstream's name for the model. */
export interface UpstreamCall {
  readonly request: ChatRequest
  readonly upstreamModel: string
  /** Given only to an adapter that `keepsDeadline`, which fails with a `timeout` past it; the others are timed by their caller. */
  readonly deadline?: AttemptDeadline
}

/** A whole completion as an upstream gave it: `usage` only when the upstream reported it (else we count). */
export interface UpstreamCompletion extends Omit<ChatCompletion, "usage"> {
  readonly usage?: ChatCompletion["usage"] | undefined
}

export interface ProviderAdapter {
  /** A whole completion. */
  readonly complete: (call: UpstreamCall) => Effect.Effect<UpstreamCompletion, AdapterFailure>
  /**
   * The adapter keeps its call's `deadline` itself, timing its waits on the upstream where it reads
   * them: a whole completion ends by `endAt`; a stream's opening and its wait for first content by
   * `endAt`, each later wait for content within `streamIdleMs` too. Its caller then runs no fiber
   * or watchdog of its own (docs/performance.md).
   */
  readonly keepsDeadline?: boolean
  /**
   * A streamed completion. The effect succeeds once the upstream has accepted
   * the call (so a refusal can still become an HTTP error); closing the scope
   * cancels the upstream request. The last chunk carries `usage` when known.
   */
  readonly stream: (
    call: UpstreamCall
  ) => Effect.Effect<Stream.Stream<ChatChunk, UpstreamFailure>, AdapterFailure, Scope.Scope>
  /** Embeddings, one vector per input in input order; absent when the upstream serves none. */
  readonly embed?: (call: EmbedCall) => Effect.Effect<EmbedResult, AdapterFailure>
}

/** Privacy facts a plugin knows about itself, used when the config gives none. */
export type PluginPrivacyDefaults = NonNullable<ProviderConfig["privacy"]>

/** `id` is the value of `plugin` in a provider's config entry; `options` decodes the entry's `options`. */
export interface ProviderPlugin<Options = any> extends Plugin<Options> {
  readonly privacyDefaults?: PluginPrivacyDefaults
  /**
   * Builds the adapter for one provider entry, given the entry's `options` decoded with this
   * plugin's schema; resources live as long as the scope.
   */
  readonly make: (
    provider: ProviderConfig,
    options: Options,
    env: Readonly<Record<string, string | undefined>>
  ) => Effect.Effect<ProviderAdapter, ProviderConfigError, Scope.Scope>
}

/** Where provider plugins register themselves at start. */
export class ProviderRegistry extends Context.Tag("svc/ProviderRegistry")<ProviderRegistry, Registry<ProviderPlugin>>() {}

/** The Layer a plugin file exports: registering `plugin` is all it does. */
export const registerPlugin = registerIn(ProviderRegistry)
