/**
 * Transcripts in the `transcripts` table. A write that fails is logged (never
 * with the text) and the call goes on: it was served and billed. Expired rows
 * are deleted at start and then hourly, by whichever instance gets there.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Layer, Schedule } from "effect"
import { NotFound } from "../../services/ApiError.ts"
import type { Message } from "../../services/Chat.ts"
import { AppConfig } from "../../services/Config.ts"
import { keepsTextOf, type TranscriptCompletion, Transcripts } from "../../services/Transcripts.ts"
import { quote } from "../../services/quote.ts"

interface TranscriptRow {
  readonly receipt_id: string
  readonly account_id: string
  readonly messages: ReadonlyArray<Message>
  readonly completion: TranscriptCompletion
  readonly created_at: Date | string
  readonly expires_at: Date | string
}

export const TranscriptsPg = Layer.scoped(
  Transcripts,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const { file } = yield* AppConfig
    const { retentionDays, standardRoute } = file.promptStorage

    const sweep = sql`DELETE FROM transcripts WHERE expires_at <= now()`.pipe(
      Effect.catchAllCause((cause) => Effect.logWarning("transcript sweep failed", cause))
    )
    yield* sweep
    yield* Effect.forkScoped(Effect.repeat(sweep, Schedule.spaced("1 hour")))

    const keeps = keepsTextOf(standardRoute)

    return Transcripts.of({
      keeps,
      retentionDays,
      keep: (call) =>
        keeps(call.servedClass)
          ? sql`
              INSERT INTO transcripts (receipt_id, account_id, messages, completion, expires_at)
              VALUES (${call.receiptId}, ${call.accountId}, ${JSON.stringify(call.messages)}::jsonb,
                      ${JSON.stringify(call.completion)}::jsonb, now() + make_interval(days => ${retentionDays}))
              ON CONFLICT (receipt_id) DO NOTHING`.pipe(
              Effect.asVoid,
              Effect.catchAllCause(() =>
                Effect.logWarning("a transcript could not be kept").pipe(Effect.annotateLogs({ receipt: call.receiptId }))
              )
            )
          : Effect.void,
      get: (accountId, receiptId) =>
        sql<TranscriptRow>`
          SELECT * FROM transcripts
          WHERE receipt_id = ${receiptId} AND account_id = ${accountId} AND expires_at > now()`.pipe(
          Effect.orDie,
          Effect.flatMap(([row]) =>
            row === undefined
              ? new NotFound({
                message: `No transcript for receipt ${quote(receiptId)}: none is kept for calls above the standard class, ` +
                  "or when prompt storage is off, and kept ones expire.",
                param: "id"
              })
              : Effect.succeed({
                receiptId: row.receipt_id,
                accountId: row.account_id,
                messages: row.messages,
                completion: row.completion,
                createdAt: new Date(row.created_at),
                expiresAt: new Date(row.expires_at)
              })
          )
        )
    })
  })
)
