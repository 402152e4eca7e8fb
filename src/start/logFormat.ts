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
 */
import { Layer, Logger } from "effect"

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
  const lines = format === "json"
    ? Logger.map(Logger.jsonLogger, lineBuffer())
    : format === "logfmt"
    ? Logger.map(Logger.logfmtLogger, lineBuffer())
    : Logger.prettyLogger()
  return Logger.replace(Logger.defaultLogger, lines)
}
