/**
 * A request's log line as the message of one log entry: its fields as they
 * are, not as log annotations (a hash map built per request, eleven inserts).
 * The gateway's loggers write it (src/start/logFormat.ts): JSON directly, in
 * the shape of Effect's JSON logger with the fields as its annotations;
 * logfmt and the pretty form as a `request` message annotated with them.
 *
 * With JSON logs (production's format), the line goes straight to the log's
 * writer (`requestLineSink`, set by the log format's layer) instead of through
 * Effect's loggers: `Effect.log` copies the fiber's refs, walks the set of
 * loggers and formats the fiber id through a hash set, which cost a call more
 * than writing the line itself (docs/performance.md). The line is the same.
 */
import { Context, Effect, type Fiber, type FiberId, FiberRef, HashMap, List, LogLevel, Option, Tracer } from "effect"

export class RequestLine {
  constructor(readonly fields: Readonly<Record<string, string | number | null>>) {}

  /** What a logger that knows nothing of it shows. */
  toString() {
    return "request"
  }

  toJSON() {
    return "request"
  }
}

/** Writes a request line of `fiberId` logged at `date` at once. */
export type RequestLineSink = (line: RequestLine, date: Date, fiberId: FiberId.FiberId) => void

/** Where request lines go when nothing else is asked of them; none: Effect's loggers. */
export const requestLineSink = FiberRef.unsafeMake<RequestLineSink | undefined>(undefined)

/**
 * Logs `line` at info level (at `nowMs`, epoch ms): through the sink when there is one and the entry
 * has nothing for Effect's loggers to add (no log annotations or log spans, no trace span to record
 * it as an event of), else with `Effect.logInfo`.
 */
export const logRequestLine = (line: RequestLine, nowMs: number): Effect.Effect<void> =>
  Effect.withFiberRuntime((fiber) => logRequestLineIn(fiber, line, nowMs))

/** `logRequestLine` in a step of `fiber` running now: written when called, through the sink (an Exit then). */
export const logRequestLineIn = (fiber: Fiber.RuntimeFiber<unknown, unknown>, line: RequestLine, nowMs: number): Effect.Effect<void> => {
  const sink = fiber.getFiberRef(requestLineSink)
  if (
    sink === undefined || HashMap.size(fiber.getFiberRef(FiberRef.currentLogAnnotations)) > 0 ||
    List.isCons(fiber.getFiberRef(FiberRef.currentLogSpan)) ||
    Option.isSome(Context.getOption(fiber.currentContext, Tracer.ParentSpan))
  ) return Effect.logInfo(line)
  if (LogLevel.greaterThan(fiber.getFiberRef(FiberRef.currentMinimumLogLevel), LogLevel.Info)) return Effect.void
  sink(line, new Date(nowMs), fiber.id())
  return Effect.void
}
