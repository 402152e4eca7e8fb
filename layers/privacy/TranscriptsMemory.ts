/**
 * Transcripts in memory, for unit tests, under TranscriptsPg's rules (config
 * `promptStorage`): only calls served at `standard_route` are kept, and only
 * when the operator turned it on; the first text kept for a receipt stays;
 * an account reads only its own, and not after `retentionDays` by the `Clock`
 * (TestClock drives expiry).
 *
 * Not modelled: a failing write (the real one logs and goes on), the hourly
 * deletion of expired rows (expired ones stay in memory, unreadable), and the
 * JSON round trip of the messages (kept as given).
 */
import { Clock, Effect, Layer } from "effect"
import { NotFound } from "../../services/ApiError.ts"
import { AppConfig } from "../../services/Config.ts"
import { keepsTextOf, type Transcript, Transcripts } from "../../services/Transcripts.ts"
import { quote } from "../../services/quote.ts"

const DAY_MS = 24 * 60 * 60 * 1000

export const TranscriptsMemory: Layer.Layer<Transcripts, never, AppConfig> = Layer.effect(
  Transcripts,
  Effect.gen(function*() {
    const { retentionDays, standardRoute } = (yield* AppConfig).file.promptStorage
    const kept = new Map<string, Transcript>()
    const keeps = keepsTextOf(standardRoute)

    return Transcripts.of({
      keeps,
      retentionDays,
      keep: (call) =>
        keeps(call.servedClass)
          ? Effect.map(Clock.currentTimeMillis, (now) => {
            if (kept.has(call.receiptId)) return
            kept.set(call.receiptId, {
              receiptId: call.receiptId,
              accountId: call.accountId,
              messages: call.messages,
              completion: call.completion,
              createdAt: new Date(now),
              expiresAt: new Date(now + retentionDays * DAY_MS)
            })
          })
          : Effect.void,
      get: (accountId, receiptId) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) => {
          const transcript = kept.get(receiptId)
          return transcript !== undefined && transcript.accountId === accountId && transcript.expiresAt.getTime() > now
            ? Effect.succeed(transcript)
            : new NotFound({
              message: `No transcript for receipt ${quote(receiptId)}: none is kept for calls above the standard class, ` +
                "or when prompt storage is off, and kept ones expire.",
              param: "id"
            })
        })
    })
  })
)
