/**
 * Deadlines of a call (config `routing.deadline`, and each provider's
 * `timeoutMs`): an attempt must end — connect, headers and the whole body or
 * stream — within its provider's `timeoutMs` and within what is left of the
 * call's deadline, whichever comes first; a stream that delivers nothing for
 * `streamIdleMs` after its first chunk is cut off too. A cut attempt fails
 * as a `timeout` (its upstream request aborted with its scope), so failover
 * and the caller's 504 / SSE error frame follow as for any timeout. Times
 * come from `Clock`. An adapter that `keepsDeadline` is told the attempt's
 * end and keeps it where it reads its upstream (the HTTP plugins); any other,
 * and every adapter under a `TestClock`, is timed here.
 */
import { Chunk, Clock, Effect, Exit, Fiber, Option, type Stream } from "effect"
import {
  type AdapterFailure,
  type ProviderAdapter,
  timedOut,
  type UpstreamCall,
  type UpstreamCompletion,
  type UpstreamFailure
} from "../../services/Providers.ts"
import { type Pull, pulledStream } from "../../services/pulledStream.ts"
import { LONGEST_TIMER_MS } from "../../plugins/support/answerReading.ts"

/** When the call must be over (epoch ms, `Clock`), and the stream idle limit. */
export interface CallDeadline {
  readonly deadlineAt: number
  readonly streamIdleMs: number
}

type DeadlineSettings = { readonly callMs: number; readonly streamIdleMs: number }

/** The call's deadline, starting now on `clock`. */
export const deadlineFrom = (clock: Clock.Clock, settings: DeadlineSettings): CallDeadline => ({
  deadlineAt: clock.unsafeCurrentTimeMillis() + settings.callMs,
  streamIdleMs: settings.streamIdleMs
})

/** The call's deadline, starting now (read off the fiber's clock in one step). */
export const callDeadline = (settings: DeadlineSettings) => Effect.clockWith((clock) => Effect.succeed(deadlineFrom(clock, settings)))

/** When an attempt starting now on `clock` must end: its `timeoutMs`, or the call's deadline if sooner. */
const endOf = (clock: Clock.Clock, timeoutMs: number, deadline: CallDeadline) =>
  Math.min(clock.unsafeCurrentTimeMillis() + timeoutMs, deadline.deadlineAt)

/** `endOf` on the fiber's clock. */
export const attemptEnd = (timeoutMs: number, deadline: CallDeadline) =>
  Effect.clockWith((clock) => Effect.succeed(endOf(clock, timeoutMs, deadline)))

/** The clock a runtime has unless a test swaps it for another (a `TestClock`): its timers are `setTimeout`s. */
const liveClock = Effect.runSync(Effect.clock)

/**
 * Fails `effect` with a timeout (interrupting it, so its scope aborts the request) unless it ends by
 * `endAt`. The work runs in a fiber of its own that a plain timer watches: `Effect.timeoutFail`
 * forks a second fiber to sleep, merges the winner's fiber refs back and waits for the loser to
 * stop, which cost a JSON call more than its whole upstream request (docs/performance.md). Under
 * another clock (a `TestClock`) it is `Effect.timeoutFail`, so tests drive it as before.
 */
export const endingBy = <A, E, R>(effect: Effect.Effect<A, E, R>, endAt: number, clock: Clock.Clock): Effect.Effect<A, E | UpstreamFailure, R> => {
  const ms = Math.max(0, endAt - clock.unsafeCurrentTimeMillis())
  const expired = () => timedOut("the attempt ran out of time", ms)
  if (clock !== liveClock) return Effect.timeoutFail(effect, { duration: ms, onTimeout: expired })
  if (ms > LONGEST_TIMER_MS) return effect
  // The work is this fiber's child: interrupting the caller interrupts it, and waits for it to stop.
  return Effect.flatMap(Effect.fork(effect), (work) =>
    Effect.async<A, E | UpstreamFailure>((resume) => {
      const ended = (exit: Exit.Exit<A, E>) => {
        clearTimeout(timer)
        resume(exit)
      }
      const timer = setTimeout(() => {
        work.removeObserver(ended)
        resume(Effect.zipRight(Fiber.interrupt(work), Effect.fail(expired())))
      }, ms)
      work.addObserver(ended)
      return Effect.sync(() => {
        clearTimeout(timer)
        work.removeObserver(ended)
      })
    }))
}

/** A whole attempt (an answer read to its end) within `timeoutMs` and the call's deadline. */
export const withinAttempt = <A, E, R>(effect: Effect.Effect<A, E, R>, timeoutMs: number, deadline: CallDeadline) =>
  Effect.clockWith((clock) => endingBy(effect, endOf(clock, timeoutMs, deadline), clock))

/** Whether `adapter` keeps its calls' deadlines itself here: only on the live clock (under a `TestClock`, tests drive the time). */
const keptBy = (adapter: ProviderAdapter, clock: Clock.Clock) => adapter.keepsDeadline === true && clock === liveClock

/**
 * A whole completion within `timeoutMs` and the call's deadline, on `clock` (the caller's fiber's),
 * made when called. An adapter that keeps the deadline itself is told when to end: no fiber and no
 * second timer per attempt (docs/performance.md). Others are timed by `endingBy`.
 */
export const completeWithin = (
  adapter: ProviderAdapter,
  call: UpstreamCall,
  timeoutMs: number,
  deadline: CallDeadline,
  clock: Clock.Clock
): Effect.Effect<UpstreamCompletion, AdapterFailure> => {
  const endAt = endOf(clock, timeoutMs, deadline)
  return keptBy(adapter, clock)
    ? adapter.complete({ ...call, deadline: { endAt, streamIdleMs: deadline.streamIdleMs } })
    : endingBy(adapter.complete(call), endAt, clock)
}

/** Whether `adapter` keeps its calls' deadlines itself here (see `keptBy`). */
export const keepsOwnDeadline = (adapter: ProviderAdapter) => Effect.map(Effect.clock, (clock) => keptBy(adapter, clock))

/**
 * A stream's pulls, opened by `open` (the upstream request sent, its pull made) before the first,
 * each of which must bring a chunk with content (empty pulls — bytes that made no chunk,
 * keep-alives — are not activity) by the attempt's end, and every one after the first content
 * within the idle limit too. Only time spent waiting on a pull counts, never time the caller took
 * to read what came before.
 *
 * Per stream, one reader fiber opens, then pulls on demand and hands each result over, and a
 * watchdog hands over a timeout instead when a wait runs too long: on the live clock a plain timer,
 * under another (a TestClock) a fiber sleeping on it. They start on the first pull and stop when
 * the stream is released. A hand-off is a callback resuming the
 * waiting side (`Effect.async`), not a queue: per pull that is two resumes, no fiber, no race. A
 * race per pull (a timeout, or `Stream.interruptWhen`, which races every pull against its signal)
 * cost more than the rest of the stream, queues more than the pull itself, and a timeout of its
 * own for the opening two fibers more per stream (docs/performance.md).
 */
export const watchedPulls = <A, E>(
  open: Effect.Effect<Pull<A, E>, E>,
  endAt: number,
  idleMs: number
): Stream.Stream<A, E | UpstreamFailure> => {
  type Result = Exit.Exit<Chunk.Chunk<A>, Option.Option<E | UpstreamFailure>>
  let clock: Clock.Clock
  /** When the wait under way started; undefined while nobody waits. */
  let waitingSince: number | undefined
  /** Content came: from now on the idle limit applies (the wait for the first has only the attempt's end). */
  let answered = false
  /** Resumes the caller waiting for the next result; set while it waits. */
  let waiter: ((result: Result) => void) | undefined
  /** Resumes the reader parked until asked; set while it is parked. */
  let wakeReader: (() => void) | undefined
  /** Asked while the reader was not parked yet: it reads again at once. */
  let asked = false
  /** A result read for a caller that stopped waiting (its pull was interrupted): the next pull takes it. */
  let unclaimed: Result | undefined
  /** The timeout the watchdog handed over: every later pull fails with it too. */
  let expired: Result | undefined

  const handOver = (result: Result) => {
    if (Exit.isSuccess(result)) answered = true
    const resume = waiter
    waiter = undefined
    waitingSince = undefined
    if (resume === undefined) unclaimed = result
    else resume(result)
  }
  const ask = () => {
    if (wakeReader === undefined) return void (asked = true)
    const wake = wakeReader
    wakeReader = undefined
    wake()
  }

  const untilContent = (pull: Pull<A, E>): Effect.Effect<Chunk.Chunk<A>, Option.Option<E>> => {
    const next: Effect.Effect<Chunk.Chunk<A>, Option.Option<E>> = Effect.flatMap(
      pull,
      (chunk) => (Chunk.isNonEmpty(chunk) ? Effect.succeed(chunk) : next)
    )
    return next
  }
  /** The next chunk with content; the first read opens the stream. */
  let read: Effect.Effect<Chunk.Chunk<A>, Option.Option<E>> = Effect.flatMap(
    Effect.mapError(open, Option.some),
    (pull) => (read = untilContent(pull))
  )
  const parked = Effect.async<void>((resume) => {
    if (asked) {
      asked = false
      return resume(Effect.void)
    }
    wakeReader = () => resume(Effect.void)
  })
  // Reads on demand until the pull ends or fails; a result that comes after the timeout is never taken.
  const reader: Effect.Effect<void> = Effect.zipRight(
    parked,
    Effect.flatMap(Effect.exit(Effect.suspend(() => read)), (result) => {
      handOver(result)
      return Exit.isSuccess(result) ? reader : Effect.void
    })
  )

  const expire = (failure: UpstreamFailure) => {
    expired = Exit.fail(Option.some(failure))
    if (waiter !== undefined) handOver(expired)
  }
  /** At `now`: the timeout to hand over, else how long until the next look. */
  const look = (now: number): UpstreamFailure | number => {
    if (waitingSince !== undefined) {
      const idleAt = answered ? waitingSince + idleMs : Infinity
      if (now >= Math.min(endAt, idleAt)) {
        return endAt <= idleAt
          ? timedOut("the attempt ran out of time", endAt - waitingSince)
          : timedOut("the stream went idle", idleMs)
      }
      // Before the first content, look again within the idle limit: content may come, and the limit apply, meanwhile.
      return Math.min(endAt, answered ? idleAt : now + idleMs) - now
    }
    // Nobody waits: wake at the attempt's end (a wait under way by then fails), else look again later.
    return endAt > now ? Math.min(endAt, now + idleMs) - now : idleMs
  }
  // On the live clock the watchdog is a plain timer; under another (a TestClock), a fiber sleeping on it.
  let timer: ReturnType<typeof setTimeout> | undefined
  const watch = () => {
    const next = look(clock.unsafeCurrentTimeMillis())
    if (typeof next !== "number") return expire(next)
    timer = setTimeout(watch, Math.min(next, LONGEST_TIMER_MS))
  }
  const watchdog: Effect.Effect<void> = Effect.suspend(() => {
    const next = look(clock.unsafeCurrentTimeMillis())
    return typeof next === "number" ? Effect.zipRight(Effect.sleep(next), watchdog) : Effect.sync(() => expire(next))
  })
  /** The reader (and under another clock the watchdog), started on the first pull; the stream's release interrupts them. */
  let fibers: Array<Fiber.RuntimeFiber<void>> | undefined
  const start = Effect.gen(function*() {
    clock = yield* Effect.clock
    fibers = [yield* Effect.forkDaemon(reader)]
    if (clock === liveClock) watch()
    else fibers.push(yield* Effect.forkDaemon(watchdog))
  })

  const watched: Effect.Effect<Chunk.Chunk<A>, Option.Option<E | UpstreamFailure>> = Effect.suspend(() => {
    if (fibers === undefined) return Effect.zipRight(start, watched)
    if (expired !== undefined) return expired
    if (unclaimed !== undefined) {
      const result = unclaimed
      unclaimed = undefined
      return result
    }
    const now = clock.unsafeCurrentTimeMillis()
    if (now >= endAt) return Effect.fail(Option.some(timedOut("the attempt ran out of time", endAt - now)))
    // The result, an `Exit`, is itself the effect the waiting pull resumes with.
    return Effect.async<Chunk.Chunk<A>, Option.Option<E | UpstreamFailure>>((resume) => {
      waitingSince = now
      waiter = resume
      ask()
      // The caller gave up (its stream was closed): nobody waits any more.
      return Effect.sync(() => {
        waiter = undefined
        waitingSince = undefined
      })
    })
  })
  return pulledStream(
    watched,
    Effect.suspend(() => {
      clearTimeout(timer)
      return fibers === undefined ? Effect.void : Fiber.interruptAll(fibers)
    })
  )
}
