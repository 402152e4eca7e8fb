/**
 * Releases reservations whose lease ran out — left by a process that died
 * mid-call — once at start and then periodically, so no credit stays held.
 * Safe with several gateway processes: each reservation is released once.
 */
import { Effect, Layer, Schedule } from "effect"
import { AppConfig } from "../../services/Config.ts"
import { Ledger } from "../../services/Ledger.ts"

export const ReservationSweeper = Layer.scopedDiscard(
  Effect.gen(function*() {
    const ledger = yield* Ledger
    const { file } = yield* AppConfig
    const sweep = ledger.sweepExpired.pipe(
      Effect.tap((released) => released > 0 ? Effect.logInfo(`released ${released} expired reservations`) : Effect.void),
      Effect.catchAllCause((cause) => Effect.logWarning("reservation sweep failed", cause))
    )
    yield* sweep
    yield* Effect.forkScoped(Effect.repeat(sweep, Schedule.spaced(`${file.billing.sweepIntervalSeconds} seconds`)))
  })
)
