/**
 * A call's stage span (layers/telemetry/stageSpan.ts): with the tracer on, the
 * stage runs under a span of its name, with its attributes, ended with the
 * stage; with the tracer off (the chat lane), the stage runs as it is, under
 * whatever span its caller had, and nothing is made.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import { stageSpan } from "../layers/telemetry/stageSpan.ts"

const spanName = Effect.map(Effect.option(Effect.currentSpan), Option.map((span) => span.name))

describe("stage spans", () => {
  it.effect("with the tracer on: the stage runs under its own span, ended with it", () =>
    Effect.gen(function*() {
      const stage = stageSpan("svc.test_stage", { "svc.stream": true })
      const seen = yield* stage(Effect.flatMap(Effect.currentSpan, (span) => Effect.succeed(span)))
      expect(seen.name).toBe("svc.test_stage")
      expect(seen.attributes.get("svc.stream")).toBe(true)
      expect(seen.status._tag).toBe("Ended")
      expect(yield* Effect.withSpan(stage(spanName), "outer")).toEqual(Option.some("svc.test_stage"))
    }))

  it.effect("with the tracer off: the stage runs under its caller's span, and a failure passes through", () =>
    Effect.gen(function*() {
      const stage = stageSpan("svc.test_stage")
      expect(yield* Effect.withTracerEnabled(stage(spanName), false)).toEqual(Option.none())
      const outer = yield* Effect.withSpan(Effect.withTracerEnabled(stage(spanName), false), "outer")
      expect(outer).toEqual(Option.some("outer"))
      expect(yield* Effect.flip(Effect.withTracerEnabled(stage(Effect.fail("no")), false))).toBe("no")
    }))
})
