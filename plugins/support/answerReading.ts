/**
 * Upstream answers read through undici's handler interface (`agent.dispatch`):
 * a whole answer as text, or a streamed one as bytes on demand. No
 * `Readable` body, async iterator, promise or abort signal per request or per
 * read (docs/performance.md): the chunks are kept as undici hands them over.
 * A non-2xx answer is read only as far as telling what its error says.
 * Interrupted, or released before its end, a request is aborted.
 */
import { Effect } from "effect"
import type { Agent, Dispatcher } from "undici"
import { timedOut, UpstreamFailure } from "../../services/Providers.ts"
import { errorKindOf, isRecord } from "./json.ts"

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
const errorTextKindOf = (text: string): string => {
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

/**
 * Why a request is aborted when its call lets go of it. Given once: without a reason, every abort
 * builds a new DOMException with its stack, which costs more than the rest of the release.
 */
const RELEASED = new Error("the call let go of the upstream request")

const isOk = (status: number) => status >= 200 && status < 300

/** What a non-2xx answer's body had come to: a bounded prefix, kept until it ends. */
const errorBody = () => {
  const chunks: Array<Buffer> = []
  let bytes = 0
  return {
    add: (chunk: Buffer) => {
      if (bytes > ERROR_BODY_BYTES) return
      chunks.push(chunk)
      bytes += chunk.length
    },
    text: () => (chunks.length === 1 ? chunks[0]!.toString("utf8") : Buffer.concat(chunks, bytes).toString("utf8"))
  }
}

/** Longer than a JavaScript timer can wait: no timer at all. */
const LONGEST_TIMER_MS = 2 ** 31 - 1

/**
 * One request read to its end: a 2xx answer's body as text, else the status answer. Given `endAt`
 * (epoch ms, `Clock`), a request not answered whole by then is aborted and fails as a `timeout`.
 */
export const wholeAnswer = (agent: Agent, options: Dispatcher.DispatchOptions, endAt?: number) =>
  Effect.clockWith((clock) =>
    Effect.async<string | StatusAnswer, UpstreamFailure>((resume) => {
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
        resume(Effect.fail(timedOut("the attempt ran out of time", ms)))
      }, ms)
      const end = (answer: Effect.Effect<string | StatusAnswer, UpstreamFailure>) => {
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
          if (!isOk(status)) return end(Effect.succeed({ status, retryAfter, kind: errorTextKindOf(body.text()) }))
          end(Effect.succeed(chunks.length === 1 ? chunks[0]!.toString("utf8") : Buffer.concat(chunks, bytes).toString("utf8")))
        },
        onResponseError: (_, error) => end(Effect.fail(failureOf(error)))
      })
      return Effect.sync(() => {
        stopped = true
        clearTimeout(timer)
        controller?.abort(RELEASED)
      })
    })
  )

/** A streamed answer's body, read on demand. */
export interface UpstreamBody {
  /** The bytes that came since the last read, waiting for some if none did; `undefined` once the body ended. One read at a time. */
  readonly read: Effect.Effect<Uint8Array | undefined, UpstreamFailure>
  /** The answer is complete (the upstream said so): what is left of the body is drained when it is released, not cut off. */
  readonly complete: () => void
  /**
   * Lets go of the request (again does nothing): a body not ended is aborted at once, or, once
   * complete, given `DRAIN_AFTER_COMPLETE_MS` to end first so its connection stays reusable.
   */
  readonly release: () => void
}

/** Bytes kept unread before the upstream's socket is paused. */
const HIGH_WATER_BYTES = 64 * 1024

/** How long a complete answer's body may take to end after it is released. */
const DRAIN_AFTER_COMPLETE_MS = 250

type Read = Effect.Effect<Uint8Array | undefined, UpstreamFailure>

/**
 * One request, sent at once, whose 2xx answer is read as it streams in: `head` ends when the
 * answer's head came (with the status answer instead for a non-2xx one), then `body` reads it.
 */
export const streamedAnswer = (agent: Agent, options: Dispatcher.DispatchOptions) => {
  let controller: Dispatcher.DispatchController | undefined
  let status = 0
  let retryAfter: string | ReadonlyArray<string> | undefined
  const errorText = errorBody()
  /** Resumes the wait for the head; set while it waits. */
  let waitingHead: ((head: Effect.Effect<StatusAnswer | undefined, UpstreamFailure>) => void) | undefined
  /** How the head came, if it came before anyone waited. */
  let head: Effect.Effect<StatusAnswer | undefined, UpstreamFailure> | undefined
  /** The answer is 2xx: what happens next is told through `read`. */
  let streaming = false
  let chunks: Array<Buffer> = []
  let bytes = 0
  let ended = false
  let failure: UpstreamFailure | undefined
  let completed = false
  let released = false
  /** Resumes the read waiting for bytes; set while it waits. */
  let waiting: ((read: Read) => void) | undefined

  const headCame = (came: Effect.Effect<StatusAnswer | undefined, UpstreamFailure>) => {
    if (waitingHead === undefined) return void (head = came)
    const resume = waitingHead
    waitingHead = undefined
    resume(came)
  }
  const statusAnswer = () => headCame(Effect.succeed({ status, retryAfter, kind: errorTextKindOf(errorText.text()) }))
  /** What a read gets now, or undefined if it must wait. Bytes that came go before a failure or the end. */
  const taken = (): Read | undefined => {
    if (chunks.length > 0) {
      const out = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, bytes)
      chunks = []
      bytes = 0
      if (controller?.paused) controller.resume()
      return Effect.succeed(out)
    }
    if (failure !== undefined) return Effect.fail(failure)
    return ended ? Effect.succeed(undefined) : undefined
  }
  const wake = () => {
    if (waiting === undefined) return
    const resume = waiting
    waiting = undefined
    resume(taken()!)
  }
  const abort = () => {
    if (!ended) controller?.abort(RELEASED)
  }
  const body: UpstreamBody = {
    read: Effect.suspend(() =>
      taken() ?? Effect.async<Uint8Array | undefined, UpstreamFailure>((resume) => {
        waiting = resume
        return Effect.sync(() => void (waiting = undefined))
      })
    ),
    complete: () => void (completed = true),
    release: () => {
      if (released) return
      released = true
      chunks = []
      if (!completed || ended) return abort()
      if (controller?.paused) controller.resume()
      setTimeout(abort, DRAIN_AFTER_COMPLETE_MS).unref()
    }
  }

  agent.dispatch(options, {
    onRequestStart: (started) => {
      if (released) started.abort(RELEASED)
      else controller = started
    },
    onResponseStart: (_, statusCode, headers) => {
      status = statusCode
      retryAfter = headers["retry-after"]
      if (!isOk(status)) return
      streaming = true
      headCame(Effect.succeed(undefined))
    },
    onResponseData: (started, chunk) => {
      if (!streaming) return errorText.add(chunk)
      if (released) return
      chunks.push(chunk)
      bytes += chunk.length
      if (bytes >= HIGH_WATER_BYTES) started.pause()
      wake()
    },
    onResponseEnd: () => {
      ended = true
      if (!streaming) return statusAnswer()
      wake()
    },
    onResponseError: (_, error) => {
      if (released) return
      // An error body that broke off still has its status.
      if (!streaming) return status !== 0 ? statusAnswer() : headCame(Effect.fail(failureOf(error)))
      failure = failureOf(error)
      wake()
    }
  })

  return {
    body,
    /** Waits for the answer's head: nothing for a 2xx answer, else its status answer. Interrupted, it releases the body. */
    head: Effect.suspend(() =>
      head ?? Effect.async<StatusAnswer | undefined, UpstreamFailure>((resume) => {
        waitingHead = resume
        return Effect.sync(() => {
          waitingHead = undefined
          body.release()
        })
      })
    )
  }
}
