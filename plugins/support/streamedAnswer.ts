/**
 * A streamed upstream answer read through undici's handler interface
 * (answerReading.ts): the request is sent at once, its head awaited, then its
 * body read on demand — each read takes every byte that came since the last,
 * or waits for some. Unread bytes past a high-water mark pause the socket.
 * Waits may be bounded (the attempt's deadline, kept by the adapter): the
 * head's by the attempt's end, each read's by what its reader says; only
 * time spent waiting is timed, with one timer per wait. A body let go of
 * before its end is aborted, unless the upstream said the answer is
 * complete: then what is left is drained for a moment, so its connection is
 * reused.
 */
import { type Clock, Effect } from "effect"
import type { Agent, Dispatcher } from "undici"
import { timedOut, type UpstreamFailure } from "../../services/Providers.ts"
import { errorBody, errorTextKindOf, failureOf, isOk, LONGEST_TIMER_MS, RELEASED, type StatusAnswer } from "./answerReading.ts"

/** Until when a read may wait (epoch ms, the answer's clock), and the failure past it. */
export interface ReadLimit {
  readonly at: number
  readonly expired: () => UpstreamFailure
}

/** A streamed answer's body, read on demand. */
export interface UpstreamBody {
  /**
   * The bytes that came since the last read, waiting for some if none did (past `limit`, failing
   * with its failure); `undefined` once the body ended. One read at a time.
   */
  readonly read: (limit?: ReadLimit) => Effect.Effect<Uint8Array | undefined, UpstreamFailure>
  /** The clock the answer's limits are read on. */
  readonly now: () => number
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

/**
 * A wait that something else ends (`end`), or its limit: `Effect.async` with a timer while it
 * waits. Ending it clears the timer; so does interrupting it.
 */
const makeWait = <A, E>(clock: Clock.Clock) => {
  let resume: ((result: Effect.Effect<A, E>) => void) | undefined
  let timer: ReturnType<typeof setTimeout> | undefined
  const stop = () => {
    resume = undefined
    clearTimeout(timer)
    timer = undefined
  }
  return {
    get waiting() {
      return resume !== undefined
    },
    /** `interrupted` runs when the waiting fiber is interrupted. */
    wait: (limit: { readonly at: number; readonly expired: () => E } | undefined, interrupted?: () => void) =>
      Effect.async<A, E>((resumeWait) => {
        resume = resumeWait
        const ms = limit === undefined ? Infinity : limit.at - clock.unsafeCurrentTimeMillis()
        if (ms <= LONGEST_TIMER_MS) {
          timer = setTimeout(() => {
            stop()
            resumeWait(Effect.fail(limit!.expired()))
          }, Math.max(0, ms))
        }
        return Effect.sync(() => {
          stop()
          interrupted?.()
        })
      }),
    end: (result: Effect.Effect<A, E>) => {
      const resumeWait = resume
      if (resumeWait === undefined) return
      stop()
      resumeWait(result)
    }
  }
}

/**
 * Sends the request at once: `head` ends when the answer's head came (with the status answer
 * instead for a non-2xx one) or fails as a `timeout` at `endAt`; then `body` reads it.
 */
export const streamedAnswer = (agent: Agent, options: Dispatcher.DispatchOptions, clock: Clock.Clock, endAt?: number) => {
  let controller: Dispatcher.DispatchController | undefined
  let status = 0
  let retryAfter: string | ReadonlyArray<string> | undefined
  const errorText = errorBody()
  const headWait = makeWait<StatusAnswer | undefined, UpstreamFailure>(clock)
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
  const readWait = makeWait<Uint8Array | undefined, UpstreamFailure>(clock)

  const headCame = (came: Effect.Effect<StatusAnswer | undefined, UpstreamFailure>) => {
    if (headWait.waiting) headWait.end(came)
    else head = came
  }
  const statusAnswer = () => headCame(Effect.succeed({ status, retryAfter, kind: errorTextKindOf(errorText.text()) }))
  /** What a read gets now, or undefined if it must wait. Bytes that came go before a failure or the end. */
  const taken = (): Effect.Effect<Uint8Array | undefined, UpstreamFailure> | undefined => {
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
    if (readWait.waiting) readWait.end(taken()!)
  }
  const abort = () => {
    if (!ended) controller?.abort(RELEASED)
  }
  const body: UpstreamBody = {
    read: (limit) => Effect.suspend(() => taken() ?? readWait.wait(limit)),
    now: () => clock.unsafeCurrentTimeMillis(),
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

  const startedAt = clock.unsafeCurrentTimeMillis()
  const headLimit = endAt === undefined ? undefined : {
    at: endAt,
    expired: () => {
      body.release()
      return timedOut("the attempt ran out of time", endAt - startedAt)
    }
  }
  return {
    body,
    /** Waits for the answer's head: nothing for a 2xx answer, else its status answer. Interrupted or out of time, it lets go of the request. */
    head: Effect.suspend(() => head ?? headWait.wait(headLimit, body.release))
  }
}
