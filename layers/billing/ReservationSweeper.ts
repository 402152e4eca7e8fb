/**
 * Releases reservations whose lease ran out — left by a process that died
 * mid-call — once at start and then periodically, so no credit stays held.
 * Safe with several gateway processes: each reservation is released once.
 * Settlements kept in this process's journal are replayed first, and a hold
 * whose settlement is still kept is never released: it is billed instead.
 * A sweep that meets a database outage says nothing (the outage is logged
 * once by `DatabaseStatus`).
 */
import { Effect, Layer, Schedule } from "effect"
import { AppConfig } from "../../services/Config.ts"
import { DatabaseStatus } from "../../services/DatabaseStatus.ts"
import { Ledger } from "../../services/Ledger.ts"
import { SettlementJournal } from "../../services/SettlementJournal.ts"

export const ReservationSweeper = Layer.scopedDiscard(
  Effect.gen(function*() {
    const ledger = yield* Ledger
    const journal = yield* SettlementJournal
    const database = yield* DatabaseStatus
    const { file } = yield* AppConfig
    const sweep = journal.replay.pipe(
      Effect.zipRight(journal.pending),
      Effect.flatMap((kept) => ledger.sweepExpired(kept)),
      Effect.tap((released) => released > 0 ? Effect.logInfo(`released ${released} expired reservations`) : Effect.void),
      Effect.catchAllCause((cause) =>
        Effect.flatMap(database.observe(cause), (outage) =>
          outage ? Effect.void : Effect.logWarning("reservation sweep failed", cause))
      )
    )
    yield* sweep
    yield* Effect.forkScoped(Effect.repeat(sweep, Schedule.spaced(`${file.billing.sweepIntervalSeconds} seconds`)))
  })
)
