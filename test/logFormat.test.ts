/**
 * Log lines are written together: one write per turn of the event loop,
 * whatever is left at exit written then; a request's line is written as
 * Effect's loggers would write its fields as annotations (src/start/logFormat.ts).
 */
import { Effect, Logger, LogLevel } from "effect"
import { describe, expect, it } from "vitest"
import { logRequestLine, RequestLine } from "../src/http/requestLine.ts"
import { asAnnotated, jsonLines, jsonLogger, lineBuffer } from "../src/start/logFormat.ts"

const nextTurn = () => new Promise((resolve) => setImmediate(resolve))

describe("log lines", () => {
  it("are written once per turn of the event loop, in order, together", async () => {
    const writes: Array<string> = []
    const line = lineBuffer((text) => writes.push(text), () => {})
    line("one")
    line("two")
    expect(writes).toEqual([])
    await nextTurn()
    expect(writes).toEqual(["one\ntwo"])
    line("three")
    await nextTurn()
    expect(writes).toEqual(["one\ntwo", "three"])
    await nextTurn()
    expect(writes).toHaveLength(2)
  })

  it("still pending when the process exits are written then", () => {
    const writes: Array<string> = []
    let exit = () => {}
    const line = lineBuffer((text) => writes.push(text), (flush) => void (exit = flush))
    line("a start-up failure's last lines")
    exit()
    expect(writes).toEqual(["a start-up failure's last lines"])
  })
})

describe("a request's line", () => {
  const fields = { request_id: "req_1", key_id: null, method: "POST", status: 200, latency_ms: 12, cost_usd: "0.000022000" }

  /** What `logger` writes for `program`, each line parsed, without the time and fiber that differ between runs. */
  const written = (logger: Logger.Logger<unknown, string>, program: Effect.Effect<void>) => {
    const lines: Array<string> = []
    Effect.runSync(program.pipe(Effect.provide(Logger.replace(Logger.defaultLogger, Logger.map(logger, (line) => lines.push(line))))))
    return lines
  }
  const comparable = (line: string) => {
    const { fiberId: _fiber, timestamp, ...rest } = JSON.parse(line)
    expect(new Date(timestamp).toISOString()).toBe(timestamp)
    return rest
  }

  it("is written in JSON as Effect's JSON logger writes the same fields as annotations", () => {
    const ours = written(jsonLogger, Effect.logInfo(new RequestLine(fields)))
    const effects = written(Logger.jsonLogger, Effect.logInfo("request").pipe(Effect.annotateLogs(fields)))
    expect(ours.map(comparable)).toEqual(effects.map(comparable))
    expect(comparable(ours[0]!)).toMatchObject({ message: "request", logLevel: "INFO", annotations: fields })
  })

  it("keeps the entry's own annotations and spans, and other messages as Effect writes them", () => {
    const annotated = written(jsonLogger, Effect.logInfo(new RequestLine(fields)).pipe(Effect.annotateLogs({ worker: 2 })))
    expect(comparable(annotated[0]!).annotations).toEqual({ ...fields, worker: 2 })
    const other = written(jsonLogger, Effect.logWarning("something else").pipe(Effect.annotateLogs({ n: 1 })))
    const effects = written(Logger.jsonLogger, Effect.logWarning("something else").pipe(Effect.annotateLogs({ n: 1 })))
    expect(other.map(comparable)).toEqual(effects.map(comparable))
  })

  /** What `jsonLines` writes for `program`, the request lines through its sink, parsed as `comparable` does. */
  const throughSink = (program: Effect.Effect<void>) => {
    const lines: Array<string> = []
    Effect.runSync(program.pipe(Effect.provide(jsonLines((line) => lines.push(line)))))
    return lines
  }

  it("goes straight to the JSON writer as the same line Effect's loggers would write, at the time the call says", () => {
    const at = Date.parse("2026-11-27T10:00:00.123Z")
    const direct = throughSink(logRequestLine(new RequestLine(fields), at))
    expect(direct).toHaveLength(1)
    expect(JSON.parse(direct[0]!).timestamp).toBe("2026-11-27T10:00:00.123Z")
    expect(JSON.parse(direct[0]!).fiberId).toMatch(/^#\d+$/)
    expect(direct.map(comparable)).toEqual(written(jsonLogger, Effect.logInfo(new RequestLine(fields))).map(comparable))
    // Other entries still go through the logger, in the order they were logged.
    const mixed = throughSink(Effect.zipRight(Effect.logWarning("before"), logRequestLine(new RequestLine(fields), at)))
    expect(mixed.map((line) => JSON.parse(line).message)).toEqual(["before", "request"])
  })

  it("goes through Effect's loggers when the entry has annotations, log spans or a trace span, and not at all below the minimum level", () => {
    const annotated = throughSink(logRequestLine(new RequestLine(fields), 0).pipe(Effect.annotateLogs({ worker: 2 })))
    expect(comparable(annotated[0]!).annotations).toEqual({ ...fields, worker: 2 })
    const spanned = throughSink(logRequestLine(new RequestLine(fields), 0).pipe(Effect.withLogSpan("outer")))
    expect(Object.keys(JSON.parse(spanned[0]!).spans)).toEqual(["outer"])
    // Inside a trace span, Effect's tracer logger records the line as a span event: through the loggers (their clock's time).
    const traced = throughSink(logRequestLine(new RequestLine(fields), 0).pipe(Effect.withSpan("call")))
    expect(traced).toHaveLength(1)
    expect(JSON.parse(traced[0]!).timestamp).not.toBe(new Date(0).toISOString())
    expect(throughSink(logRequestLine(new RequestLine(fields), 0).pipe(Logger.withMinimumLogLevel(LogLevel.Warning)))).toEqual([])
    // Without a sink (any other format, a test's own logger): Effect's loggers, as before.
    expect(written(jsonLogger, logRequestLine(new RequestLine(fields), 0)).map(comparable)).toEqual(
      written(jsonLogger, Effect.logInfo(new RequestLine(fields))).map(comparable)
    )
  })

  it("is a `request` message annotated with its fields in logfmt", () => {
    const lines: Array<string> = []
    const logfmt = Logger.mapInputOptions(Logger.map(Logger.logfmtLogger, (line) => lines.push(line)), asAnnotated)
    Effect.runSync(Effect.logInfo(new RequestLine(fields)).pipe(Effect.provide(Logger.replace(Logger.defaultLogger, logfmt))))
    expect(lines[0]).toContain("message=request")
    expect(lines[0]).toContain("request_id=req_1")
    expect(lines[0]).toContain("cost_usd=0.000022000")
  })
})
