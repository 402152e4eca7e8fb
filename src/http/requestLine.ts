/**
 * A request's log line as the message of one log entry: its fields as they
 * are, not as log annotations (a hash map built per request, eleven inserts).
 * The gateway's loggers write it (src/start/logFormat.ts): JSON directly, in
 * the shape of Effect's JSON logger with the fields as its annotations;
 * logfmt and the pretty form as a `request` message annotated with them.
 */
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
