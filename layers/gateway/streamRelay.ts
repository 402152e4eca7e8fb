/**
 * The gateway's pass over a streamed answer, one synchronous pass per pulled
 * batch of chunks (cheaper than an effect per frame): every chunk relabelled
 * with our completion id and the catalogue model; the usage chunk dropped
 * unless the caller asked for usage (adapters always report it); the privacy
 * block on the final chunk — the usage chunk when the caller asked for usage,
 * else the one with the finish reason, else a last chunk of its own — and a
 * tally of what billing needs: the reported usage, or the generated text to
 * count, and the answer's text when a transcript keeps it.
 *
 * Fairness: the relay passes at most `FRAMES_PER_TURN` chunks at a time
 * and gives the event loop a turn (`eventLoopTurn`) before a slice that would
 * make more than that many since the last one (never before the first). A
 * frame that came in a read of its own already followed a turn (the read), so
 * a turn per pulled batch would only add a macrotask and an async step per
 * frame.
 * A fast upstream's bytes are already buffered, so without it a stream's
 * fiber would go from read to write on microtasks alone (the fiber scheduler
 * reaches the event loop only every few thousand of those), and one read of a
 * fast upstream holds hundreds of frames: a few such streams would starve
 * every other request's I/O for seconds.
 */
import { Chunk, Clock, Effect, Option, type Stream } from "effect"
import type { ChatChunk, Usage } from "../../services/Chat.ts"
import type { PrivacyBlock } from "../../services/Privacy.ts"
import type { UpstreamFailure } from "../../services/Providers.ts"
import { type Pull, throughPull } from "../../services/pulledStream.ts"
import { eventLoopTurn } from "../../plugins/support/eventLoopTurn.ts"

export interface RelayOptions {
  readonly id: string
  readonly model: string
  readonly privacy: PrivacyBlock
  /** The caller set `stream_options.include_usage`. */
  readonly wantsUsage: boolean
  /** The call's text is kept (a transcript): gather the answer's content. */
  readonly keepsText: boolean
  /** The usage to tell the caller for a reported one: as billed (an impossible figure is not echoed). */
  readonly told: (reported: Usage) => Usage
}

/** Text a chunk adds to the answer, for counting when the upstream reports no usage. */
const generatedText = (chunk: ChatChunk) => {
  let text = ""
  for (const choice of chunk.choices) {
    text += choice.delta.content ?? ""
    for (const call of choice.delta.tool_calls ?? []) text += (call.function?.name ?? "") + (call.function?.arguments ?? "")
  }
  return text
}

/** Chunks relayed (relabelled, encoded, written) between two turns of the event loop. */
export const FRAMES_PER_TURN = 8

/** A pulled batch in slices of at most `FRAMES_PER_TURN`. */
const slices = <A>(pulled: Chunk.Chunk<A>): Array<Chunk.Chunk<A>> => {
  if (pulled.length <= FRAMES_PER_TURN) return [pulled]
  const out: Array<Chunk.Chunk<A>> = []
  const array = Chunk.toReadonlyArray(pulled)
  for (let i = 0; i < array.length; i += FRAMES_PER_TURN) out.push(Chunk.unsafeFromArray(array.slice(i, i + FRAMES_PER_TURN)))
  return out
}

export class StreamRelay {
  /** The upstream's usage, when it reported one. */
  reported: Usage | undefined
  /** Everything generated so far (content and tool calls), for our own count. */
  generated = ""
  /** The answer's content, gathered only when `keepsText`. */
  content = ""
  /** How the upstream stream failed, if it did. */
  failure: UpstreamFailure | undefined
  private privacySent = false
  /** Chunks passed since the event loop last had a turn. */
  private sinceTurn = 0

  constructor(private readonly options: RelayOptions) {}

  /** The relayed stream; a failure is noted, then handed to `onFailure` for the caller's error. */
  relay<E>(
    chunks: Stream.Stream<ChatChunk, UpstreamFailure>,
    onFailure: (failure: UpstreamFailure) => Effect.Effect<never, E>
  ): Stream.Stream<ChatChunk, E> {
    return throughPull(chunks, (pull) => this.relayPull(pull, onFailure))
  }

  /** One slice per pull (so encoding and the socket write work in slices too); the closing chunk or the failure at the end. */
  private relayPull<E>(
    source: Pull<ChatChunk, UpstreamFailure>,
    onFailure: (failure: UpstreamFailure) => Effect.Effect<never, E>
  ): Pull<ChatChunk, E> {
    /** Slices of the last pulled batch not passed yet. */
    let pending: Array<Chunk.Chunk<ChatChunk>> = []
    let over = false
    const next: Pull<ChatChunk, E> = Effect.suspend(() => {
      const slice = pending.shift()
      if (slice !== undefined) return this.passInTurn(slice)
      if (over) return Effect.fail(Option.none())
      return Effect.matchEffect(source, {
        onSuccess: (pulled) => {
          pending = slices(pulled)
          return next
        },
        onFailure: (end): Pull<ChatChunk, E> => {
          over = true
          if (Option.isSome(end)) {
            this.failure = end.value
            return Effect.mapError(onFailure(end.value), Option.some)
          }
          return this.privacySent ? Effect.fail(Option.none()) : Effect.map(this.closingChunk, Chunk.of)
        }
      })
    })
    return next
  }

  /**
   * The turn comes before a slice that would take the count past the limit, never before the
   * stream's first: the first frames go out at once (time to first byte), the bound holds.
   */
  private passInTurn(slice: Chunk.Chunk<ChatChunk>): Effect.Effect<Chunk.Chunk<ChatChunk>> {
    const turn = this.sinceTurn > 0 && this.sinceTurn + slice.length > FRAMES_PER_TURN
    if (turn) this.sinceTurn = 0
    this.sinceTurn += slice.length
    return turn ? Effect.map(eventLoopTurn, () => this.pass(slice)) : Effect.succeed(this.pass(slice))
  }

  private pass(pulled: Chunk.Chunk<ChatChunk>): Chunk.Chunk<ChatChunk> {
    const { id, keepsText, model, privacy, wantsUsage } = this.options
    const out: Array<ChatChunk> = []
    for (const chunk of pulled) {
      if (chunk.usage) this.reported = chunk.usage
      this.generated += generatedText(chunk)
      if (keepsText) this.content += chunk.choices[0]?.delta.content ?? ""
      if (!wantsUsage && chunk.choices.length === 0) continue
      const final = wantsUsage ? chunk.usage != null : chunk.choices.some((choice) => choice.finish_reason !== null)
      const relabelled = chunk.usage ? { ...chunk, id, model, usage: this.options.told(chunk.usage) } : { ...chunk, id, model }
      if (!final || this.privacySent) {
        out.push(relabelled)
      } else {
        this.privacySent = true
        out.push({ ...relabelled, privacy })
      }
    }
    return Chunk.unsafeFromArray(out)
  }

  /** A last chunk of its own for the privacy block, when no chunk was final. */
  private get closingChunk(): Effect.Effect<ChatChunk> {
    const { id, model, privacy } = this.options
    return Effect.map(Clock.currentTimeMillis, (now) => ({
      id,
      object: "chat.completion.chunk" as const,
      created: Math.floor(now / 1000),
      model,
      choices: [],
      privacy
    }))
  }
}
