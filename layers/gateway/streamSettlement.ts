/**
 * The end of a streamed chat call, however it ended (done, failed after its
 * first chunk, or the client left): the serving attempt's health, then the
 * bill for what was generated — the upstream's usage when it reported one,
 * else our own count of what reached us. A stream that failed before anything
 * was generated bills nothing: its hold is released (and there is no settlement).
 */
import { Effect } from "effect"
import type { Pricing } from "../../services/Pricing.ts"
import type { Upstream } from "../../services/Upstream.ts"
import type { Answered } from "../../services/Upstream.ts"
import { isTokenCount } from "../billing/usageCheck.ts"
import type { Settlement } from "../../services/Billing.ts"
import { type BillOptions, fromUsage, settleChat } from "./chatSettlement.ts"
import type { StreamRelay } from "./streamRelay.ts"

type SettleServices = Parameters<typeof settleChat>[0] & {
  readonly upstream: Upstream["Type"]
  readonly pricing: Pricing["Type"]
}

export const settleStream = (
  services: SettleServices,
  call: Parameters<typeof settleChat>[1],
  answered: Answered<unknown>,
  relay: StreamRelay,
  firstChunkMs: number,
  options?: BillOptions
): Effect.Effect<Settlement | undefined> =>
  Effect.suspend(() => {
    const latencyMs = Math.round(performance.now() - answered.startedAt)
    const { failure, generated, reported } = relay
    const last = answered.attempts.length - 1
    const attempts = answered.attempts.map((attempt, i) =>
      i < last ? attempt : {
        ...attempt,
        latencyMs,
        ...(failure !== undefined
          ? { outcome: failure.kind === "timeout" ? "timeout" as const : "error" as const, failure: failure.kind }
          : {})
      }
    )
    const usage = reported !== undefined
      ? fromUsage(reported)
      : { inputTokens: call.admitted.inputTokens, outputTokens: services.pricing.countText(generated) }
    const recorded = services.upstream.served(
      answered,
      failure === undefined
        ? {
          ok: true,
          latencyMs,
          ttftMs: Math.round(firstChunkMs),
          outputTokens: isTokenCount(usage.outputTokens) ? usage.outputTokens : 0
        }
        : { ok: false, latencyMs, failure }
    )
    if (reported === undefined && generated === "" && failure !== undefined) {
      return Effect.zipRight(recorded, Effect.as(services.billing.release(call.hold), undefined))
    }
    return Effect.zipRight(
      recorded,
      settleChat(services, call, answered, { usage, attempts, completion: { content: relay.content } }, options)
    )
  })
