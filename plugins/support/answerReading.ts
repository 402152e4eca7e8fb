/**
 * Upstream answers read through undici's handler interface (`agent.dispatch`):
 * a whole answer as text here, a streamed one as bytes on demand in
 * streamedAnswer.ts. No `Readable` body, async iterator, promise or abort
 * signal per request or per read (docs/performance.md): the chunks are kept
 * as undici hands them over. A non-2xx answer is read only as far as telling
 * what its error says. Interrupted, or let go of before its end, a request is
 * aborted.
 */
import { type Clock, Effect, Exit } from "effect"
import type { Agent, Dispatcher } from "undici"
import { timedOut, UpstreamFailure } from "../../services/Providers.ts"
import { errorKindOf, isRecord, protocolFailureOf } from "./json.ts"

const timeoutCodes = new Set(["UND_ERR_HEADERS_TIMEOUT", "UND_ERR_BODY_TIMEOUT", "UND_ERR_CONNECT_TIMEOUT", "ETIMEDOUT"])

/** A transport error (no answer, or the answer broke off) as a failure. */
export const failureOf = (error: unknown): UpstreamFailure => {
  const code = typeof error === "object" && error !== null ? (error as { code?: unknown }).code : undefined
  const detail = `${error instanceof Error ? error.message : String(error)}${typeof code === "string" ? ` (${code})` : ""}`
  return new UpstreamFailure({ kind: typeof code === "string" && timeoutCodes.has(code) ? "timeout" : "connection", detail })
}

/** How much of an error body is read to tell what it says. */
const ERROR_BODY_BYTES = 16_384

/** What an error body's text says, without its free text (see `errorKindOf`); never fails. */
export const errorTextKindOf = (text: string): string => {
  try {
    const json = JSON.parse(text)
    return errorKindOf(isRecord(json) && isRecord(json.error) ? json.error : json)
  } catch {
    // Not JSON, or broken: the status is what matters.
    return "unspecified"
  }
}

/** A non-2xx answer, as far as a failure tells it: its status, `Retry-After`, and what its body says. */
export interface StatusAnswer {
  readonly status: number
  readonly retryAfter: string | ReadonlyArray<string> | undefined
  readonly kind: string
}

/** `Retry-After` in seconds (delta-seconds or an HTTP date, against `nowMillis` from `Clock`), when present and sane. */
export const retryAfterSeconds = (header: string | ReadonlyArray<string> | undefined, nowMillis: number) => {
  const value = Array.isArray(header) ? header[0] : header
  if (typeof value !== "string" || value.trim() === "") return undefined
  const seconds = /^\d+(\.\d+)?$/.test(value.trim()) ? Number(value) : (Date.parse(value) - nowMillis) / 1000
  return Number.isFinite(seconds) ? Math.max(0, seconds) : undefined
}

/** A non-2xx answer as a failure (`Retry-After` read against `nowMillis`). */
export const statusFailureOf = (answer: StatusAnswer, nowMillis: number) => {
  const retryAfter = retryAfterSeconds(answer.retryAfter, nowMillis)
  return new UpstreamFailure({
    kind: "status",
    status: answer.status,
    detail: `upstream answered ${answer.status}${answer.kind ? ` (${answer.kind})` : ""}`,
    ...(retryAfter !== undefined ? { retryAfterSeconds: retryAfter } : {})
  })
}

/**
 * Why a request is aborted when its call lets go of it. Given once: without a reason, every abort
 * builds a new DOMException with its stack, which costs more than the rest of the release.
 */
export const RELEASED = new Error("the call let go of the upstream request")

export const isOk = (status: number) => status >= 200 && status < 300

/** Chunks as one UTF-8 text (`bytes` long). */
const joinedText = (chunks: ReadonlyArray<Buffer>, bytes: number) =>
  chunks.length === 1 ? chunks[0]!.toString("utf8") : Buffer.concat(chunks, bytes).toString("utf8")

/** What a non-2xx answer's body had come to: a bounded prefix, kept until it ends. */
export const errorBody = () => {
  const chunks: Array<Buffer> = []
  let bytes = 0
  return {
    add: (chunk: Buffer) => {
      if (bytes > ERROR_BODY_BYTES) return
      chunks.push(chunk)
      bytes += chunk.length
    },
    text: () => joinedText(chunks, bytes)
  }
}

/** Longer than a JavaScript timer can wait: no timer at all. */
export const LONGEST_TIMER_MS = 2 ** 31 - 1

/**
 * One request read to its end: a 2xx answer's body read by `read` as it ends (a throw is the
 * upstream's protocol failure), so the call goes on with what it needs in one step; a non-2xx
 * answer fails with its status. Given `endAt` (epoch ms, `Clock`), a request not answered whole
 * by then is aborted and fails as a `timeout`.
 */
export const wholeAnswer = <A>(
  agent: Agent,
  options: Dispatcher.DispatchOptions,
  read: (text: string, clock: Clock.Clock) => A,
  endAt?: number
) =>
  Effect.clockWith((clock) =>
    Effect.async<A, UpstreamFailure>((resume) => {
      let controller: Dispatcher.DispatchController | undefined
      let stopped = false
      let status = 0
      let retryAfter: string | ReadonlyArray<string> | undefined
      const body = errorBody()
      const chunks: Array<Buffer> = []
      let bytes = 0
      const ms = endAt === undefined ? Infinity : Math.max(0, endAt - clock.unsafeCurrentTimeMillis())
      const timer = ms > LONGEST_TIMER_MS ? undefined : setTimeout(() => {
        stopped = true
        controller?.abort(RELEASED)
        resume(Exit.fail(timedOut("the attempt ran out of time", ms)))
      }, ms)
      const end = (answer: Exit.Exit<A, UpstreamFailure>) => {
        if (stopped) return
        stopped = true
        clearTimeout(timer)
        resume(answer)
      }
      agent.dispatch(options, {
        onRequestStart: (started) => {
          if (stopped) started.abort(RELEASED)
          else controller = started
        },
        onResponseStart: (_, statusCode, headers) => {
          status = statusCode
          retryAfter = headers["retry-after"]
        },
        onResponseData: (_, chunk) => {
          if (!isOk(status)) return body.add(chunk)
          chunks.push(chunk)
          bytes += chunk.length
        },
        onResponseEnd: () => {
          if (!isOk(status)) {
            return end(Exit.fail(statusFailureOf({ status, retryAfter, kind: errorTextKindOf(body.text()) }, clock.unsafeCurrentTimeMillis())))
          }
          let answer: A
          try {
            answer = read(joinedText(chunks, bytes), clock)
          } catch (error) {
            return end(Exit.fail(protocolFailureOf(error)))
          }
          end(Exit.succeed(answer))
        },
        onResponseError: (_, error) => end(Exit.fail(failureOf(error)))
      })
      return Effect.sync(() => {
        stopped = true
        clearTimeout(timer)
        controller?.abort(RELEASED)
      })
    })
  )
