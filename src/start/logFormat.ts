/**
 * How the gateway writes its log lines: `LOG_FORMAT=json` (one JSON object a
 * line, what log collectors read) or `LOG_FORMAT=logfmt` (one `key=value`
 * line); unset, JSON unless standard output is a terminal, where a person
 * reads Effect's pretty format. Exactly one logger writes each line: the
 * platform's `runMain` adds its pretty logger unless told not to
 * (src/main.ts), and until session 24 every line went out twice, as JSON and
 * pretty, the latter a write per line of it (a dozen a request).
 *
 * JSON and logfmt lines are written together, once per turn of the event
 * loop (`lineBuffer`): Effect's own loggers call `console.log` per line, and
 * on Linux a write to a file or a pipe is synchronous (docs/performance.md).
 * A JSON request line skips Effect's loggers altogether (`jsonLines`).
 */
import { Cause, Effect, FiberId, HashMap, Layer, List, Logger } from "effect"
import { RequestLine, requestLineSink } from "../http/requestLine.ts"

/** The request line of a log entry whose message is one (`Effect.log` passes its messages as an array). */
const requestLineOf = (message: unknown): RequestLine | undefined => {
  const only = Array.isArray(message) ? (message.length === 1 ? message[0] : undefined) : message
  return only instanceof RequestLine ? only : undefined
}

/** An entry as loggers that know nothing of request lines read it: a `request` message annotated with its fields. */
export const asAnnotated = <Message>(options: Logger.Logger.Options<Message>): Logger.Logger.Options<unknown> => {
  const line = requestLineOf(options.message)
  if (line === undefined) return options
  let annotations = options.annotations
  for (const [key, value] of Object.entries(line.fields)) annotations = HashMap.set(annotations, key, value)
  return { ...options, message: "request", annotations }
}

/**
 * JSON lines as Effect's JSON logger writes them; a request line (one a call) built directly, with
 * its fields as the annotations: the general path's annotations map, replacer and copies were
 * ~30 KiB a call (docs/performance.md).
 */
export const jsonLogger = Logger.make<unknown, string>((options) => {
  const line = requestLineOf(options.message)
  if (line === undefined || HashMap.size(options.annotations) > 0 || List.isCons(options.spans) || !Cause.isEmpty(options.cause)) {
    return Logger.jsonLogger.log(asAnnotated(options))
  }
  return requestJson(line, options.logLevel.label, options.date, options.fiberId)
})

/** A request line in JSON, as Effect's JSON logger writes an entry with its fields as annotations. */
const requestJson = (line: RequestLine, level: string, date: Date, fiberId: FiberId.FiberId) =>
  JSON.stringify({
    message: "request",
    logLevel: level,
    timestamp: date.toISOString(),
    annotations: line.fields,
    spans: {},
    // A call's fiber id is one runtime id: named without `threadName`'s hash set of ids.
    fiberId: fiberId._tag === "Runtime" ? `#${fiberId.id}` : FiberId.threadName(fiberId)
  })

/**
 * JSON lines to `write`: every entry through `jsonLogger`, and request lines straight from the call
 * (src/http/requestLine.ts), the same line without Effect's loggers in between.
 */
export const jsonLines = (write: (line: string) => void): Layer.Layer<never> =>
  Layer.merge(
    Logger.replace(Logger.defaultLogger, Logger.map(jsonLogger, write)),
    Layer.scopedDiscard(
      Effect.locallyScopedWith(requestLineSink, () => (line, date, fiberId) => write(requestJson(line, "INFO", date, fiberId)))
    )
  )

/** What the buffer writes with: `console.log` ignores a closed stream (EPIPE) where a bare write would throw. */
const writeOut = (text: string) => console.log(text)

/**
 * Lines kept until the event loop's next turn, then written in one call; whatever is left when the
 * process exits (`process.exit` after a start-up failure, say) is written then, synchronously.
 */
export const lineBuffer = (
  write: (text: string) => void = writeOut,
  atExit: (flush: () => void) => void = (flush) => void process.once("exit", flush)
) => {
  let lines: Array<string> = []
  let scheduled = false
  const flush = () => {
    scheduled = false
    if (lines.length === 0) return
    const text = lines.join("\n")
    lines = []
    write(text)
  }
  atExit(flush)
  return (line: string) => {
    lines.push(line)
    if (scheduled) return
    scheduled = true
    setImmediate(flush)
  }
}

export const logFormat = (env: Record<string, string | undefined>, terminal: boolean): Layer.Layer<never> => {
  const format = env.LOG_FORMAT ?? (terminal ? "pretty" : "json")
  if (format === "json") return jsonLines(lineBuffer())
  const lines = format === "logfmt"
    ? Logger.mapInputOptions(Logger.map(Logger.logfmtLogger, lineBuffer()), asAnnotated)
    : Logger.mapInputOptions(Logger.prettyLogger(), asAnnotated)
  return Logger.replace(Logger.defaultLogger, lines)
}
