/**
 * Stages that answer at once (services/atOnce.ts): an answer already known
 * goes on as a plain call, one still to come as `flatMap` would, a failure
 * is passed on without calling what follows; and a stage made with `stage`
 * (layers/telemetry/stageSpan.ts) does its work when it runs, in its span
 * when traces are on, not when it is made.
 */
import { Cause, Context, Data, Effect, Either, Exit, FiberId, Option, Tracer } from "effect"
import { describe, expect, it } from "vitest"
import { eachAtOnce, isAnswered, mapAtOnce, mapBothAtOnce, thenAtOnce } from "../services/atOnce.ts"
import { stage } from "../layers/telemetry/stageSpan.ts"

describe("isAnswered", () => {
  it("tells an Exit from any other effect as Exit.isExit does", () => {
    class Refused extends Data.TaggedError("Refused")<{}> {}
    class Tag extends Context.Tag("svc/test/Tag")<Tag, number>() {}
    const effects: Array<Effect.Effect<unknown, unknown, unknown>> = [
      Effect.succeed(1), Effect.void, Effect.fail("no"), Effect.die("broken"), Exit.succeed(2), Exit.interrupt(FiberId.none),
      Effect.sync(() => 3), Effect.suspend(() => Effect.succeed(4)), Effect.flatMap(Effect.succeed(5), Effect.succeed),
      Option.some(6), Option.none(), Either.right(7), Either.left(8), new Refused(), Tag
    ]
    for (const effect of effects) expect(isAnswered(effect)).toBe(Exit.isExit(effect))
    expect(effects.filter(isAnswered)).toHaveLength(6)
  })
})

describe("eachAtOnce", () => {
  it("runs each item in its turn, whatever the ones before did; when all answer at once, it is an Exit already", () => {
    const ran: Array<string> = []
    const recovered: Array<string> = []
    const run = (name: string): Effect.Effect<void> => {
      ran.push(name)
      if (name === "throws") throw new Error("broken")
      if (name === "fails") return Effect.die("lost")
      return name.startsWith("later") ? Effect.sync(() => void ran.push(`${name} ran`)) : Effect.void
    }
    const recover = (cause: Cause.Cause<unknown>) => Effect.sync(() => void recovered.push(Cause.pretty(cause).split("\n")[0]!))

    const atOnce = eachAtOnce(["health", "permit"], run, recover)
    expect(isAnswered(atOnce)).toBe(true)
    expect(ran).toEqual(["health", "permit"])

    ran.length = 0
    const mixed = eachAtOnce(["health", "later settlement", "throws", "fails", "permit"], run, recover)
    // Called in turn: nothing after an item still to run is called before that item has run.
    expect(ran).toEqual(["health", "later settlement"])
    Effect.runSync(mixed)
    expect(ran).toEqual(["health", "later settlement", "later settlement ran", "throws", "fails", "permit"])
    expect(recovered).toEqual(["Error: broken", "Error: lost"])
  })
})

describe("mapBothAtOnce", () => {
  it("maps a known answer or error at once, and one still to come when it runs", () => {
    const calls: Array<string> = []
    const both = { onFailure: (e: string) => (calls.push(e), `${e}!`), onSuccess: (n: number) => (calls.push(String(n)), n + 1) }
    expect(mapBothAtOnce(Effect.succeed(1), both)).toStrictEqual(Exit.succeed(2))
    expect(mapBothAtOnce(Effect.fail("no"), both)).toStrictEqual(Exit.fail("no!"))
    const later = mapBothAtOnce(Effect.sync(() => 5), both)
    expect(calls).toEqual(["1", "no"])
    expect(Effect.runSync(later)).toBe(6)
    expect(calls).toEqual(["1", "no", "5"])
  })
})

describe("thenAtOnce", () => {
  it("goes on at once from an answer already known: what follows is called before anything runs", () => {
    const calls: Array<number> = []
    const chained = thenAtOnce(Effect.succeed(20), (n) => {
      calls.push(n)
      return Effect.succeed(n + 1)
    })
    expect(calls).toEqual([20])
    expect(Exit.isExit(chained)).toBe(true)
    expect(Effect.runSync(chained)).toBe(21)
  })

  it("waits for an answer still to come: what follows is called only when the effect runs", () => {
    const calls: Array<number> = []
    const chained = thenAtOnce(Effect.sync(() => 20), (n) => {
      calls.push(n)
      return Effect.succeed(n + 1)
    })
    expect(calls).toEqual([])
    expect(Effect.runSync(chained)).toBe(21)
    expect(Effect.runSync(chained)).toBe(21)
    expect(calls).toEqual([20, 20])
  })

  it("passes a failure on without calling what follows, whether known at once or not", () => {
    let called = false
    const next = () => {
      called = true
      return Effect.succeed("never")
    }
    expect(Effect.runSyncExit(thenAtOnce(Effect.fail("refused" as const), next))).toEqual(Exit.fail("refused"))
    expect(Effect.runSyncExit(thenAtOnce(Effect.fail(new Error("refused")), next))._tag).toBe("Failure")
    expect(called).toBe(false)
  })

  it("chains a whole common case into one answer known at once", () => {
    const admitted = thenAtOnce(Effect.succeed("request"), (request) =>
      thenAtOnce(Effect.void, () => mapAtOnce(Effect.succeed(3), (tokens) => ({ request, tokens }))))
    expect(Exit.isExit(admitted)).toBe(true)
    expect(Effect.runSync(admitted)).toEqual({ request: "request", tokens: 3 })
  })
})

describe("mapAtOnce", () => {
  it("maps an answer known at once to another, and one still to come when it runs", () => {
    const known = mapAtOnce(Effect.succeed(2), (n) => n * 10)
    expect(Exit.isExit(known)).toBe(true)
    expect(Effect.runSync(known)).toBe(20)
    let mapped = 0
    const later = mapAtOnce(Effect.sync(() => 3), (n) => (mapped = n * 10))
    expect(mapped).toBe(0)
    expect(Effect.runSync(later)).toBe(30)
  })

  it("passes a failure on unmapped", () => {
    expect(Effect.runSyncExit(mapAtOnce(Effect.fail("no" as const), () => 1))).toEqual(Exit.fail("no"))
  })
})

describe("stage", () => {
  it("makes its effect when it runs, each time it runs, not when it is made", () => {
    let made = 0
    const admission = stage("svc.admission", () => {
      made++
      return Effect.succeed(made)
    })
    expect(made).toBe(0)
    expect(Effect.runSync(admission)).toBe(1)
    expect(Effect.runSync(admission)).toBe(2)
  })

  it("does its work inside its span when traces are on: the span starts before the stage is made", () => {
    const seen: Array<string> = []
    const tracer = Tracer.make({
      span: (name, parent, context, links, startTime, kind, options) => {
        seen.push(`span ${name}`)
        return Effect.runSync(Effect.map(Effect.tracer, (t) => t.span(name, parent, context, links, startTime, kind, options)))
      },
      context: (f) => f()
    })
    const spanName = Effect.runSync(
      stage("svc.route_plan", () => {
        seen.push("made")
        return Effect.map(Effect.currentSpan, (span) => span.name)
      }).pipe(Effect.withTracer(tracer), Effect.withTracerEnabled(true))
    )
    expect(spanName).toBe("svc.route_plan")
    expect(seen).toEqual(["span svc.route_plan", "made"])
  })

  it("runs without a span when traces are off", () => {
    const span = Effect.runSync(
      stage("svc.route_plan", () => Effect.option(Effect.currentSpan)).pipe(Effect.withTracerEnabled(false))
    )
    expect(span._tag).toBe("None")
  })
})
