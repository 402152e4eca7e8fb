/**
 * Calling upstreams for a planned call: its routes tried in order with the
 * retry budget, backoff and `Retry-After`, open circuits skipped, each
 * deployment blamed at most once per call in the shared health; a stream
 * counts as answered once its first chunk with content arrived. Every served
 * attempt ends with a health record (`served`).
 */
import { Context, type Effect, type Scope, type Stream } from "effect"
import type { Tier } from "./Catalogue.ts"
import type { ChatChunk, ChatRequest } from "./Chat.ts"
import type { RequestNotTranslatable, UpstreamCompletion, UpstreamFailure } from "./Providers.ts"
import type { Target } from "./RoutePlanner.ts"

/** One attempt, for the receipt and the routing events (`deployment` is for operators only). */
export interface AttemptLog {
  readonly model: string
  readonly tier: Tier
  readonly deployment: string
  readonly outcome: "ok" | "error" | "timeout"
  readonly latencyMs: number
  /** What went wrong, in words that name no provider (e.g. `status 503`, `timeout`). */
  readonly failure?: string
}

/** Every route failed (or none could be tried). */
export interface RoutesFailed {
  readonly attempts: ReadonlyArray<AttemptLog>
  readonly failures: ReadonlyArray<UpstreamFailure>
  /** Routes whose plugin could not express the request (nothing was sent to them). */
  readonly untranslatable: ReadonlyArray<{ readonly error: RequestNotTranslatable; readonly target: Target }>
  /** Set when the request itself was refused: the failure and the route that refused it. */
  readonly refused?: { readonly failure: UpstreamFailure; readonly target: Target }
}

export interface Answered<A> {
  readonly value: A
  readonly target: Target
  /** Every attempt, the successful last one included. */
  readonly attempts: ReadonlyArray<AttemptLog>
  /** When the successful attempt started (`performance.now()`). */
  readonly startedAt: number
}

/** How the serving attempt ended, for the deployment's health. */
export type ServedOutcome =
  | { readonly ok: true; readonly latencyMs: number; readonly outputTokens: number; readonly ttftMs?: number }
  | { readonly ok: false; readonly latencyMs: number; readonly failure: UpstreamFailure }

export class Upstream extends Context.Tag("svc/Upstream")<Upstream, {
  readonly complete: (
    targets: ReadonlyArray<Target>,
    request: ChatRequest
  ) => Effect.Effect<Answered<UpstreamCompletion>, RoutesFailed>
  /** The stream of the first route that delivered content; closing the scope cancels its upstream request. */
  readonly stream: (
    targets: ReadonlyArray<Target>,
    request: ChatRequest
  ) => Effect.Effect<Answered<Stream.Stream<ChatChunk, UpstreamFailure>>, RoutesFailed, Scope.Scope>
  /** Records how the serving attempt ended in its deployment's health. */
  readonly served: (answered: Answered<unknown>, outcome: ServedOutcome) => Effect.Effect<void>
}>() {}
