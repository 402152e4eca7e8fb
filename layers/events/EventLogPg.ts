/** Events stored in the `events` table. */
import { SqlClient } from "@effect/sql"
import { Effect, Layer } from "effect"
import { EventLog } from "../../services/EventLog.ts"
import { Ids } from "../../services/Ids.ts"

export const EventLogPg = Layer.effect(
  EventLog,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const ids = yield* Ids
    return {
      record: (event) =>
        sql`
          INSERT INTO events (id, type, account_id, request_id, receipt_id, data)
          VALUES (${ids.make("evt")}, ${event.type}, ${event.accountId}, ${event.requestId ?? null},
                  ${event.receiptId ?? null}, ${JSON.stringify(event.data)}::jsonb)`.pipe(Effect.asVoid, Effect.orDie)
    }
  })
)
