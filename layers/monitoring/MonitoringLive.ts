/** `Monitoring`: the account's calls over the window (CallStats) with its payment health. */
import { Clock, Effect, Layer } from "effect"
import { Accounts } from "../../services/Accounts.ts"
import { CallStats } from "../../services/CallStats.ts"
import { Monitoring, WINDOWS } from "../../services/Monitoring.ts"
import { paymentHealth } from "./paymentHealth.ts"

export const MonitoringLive = Layer.effect(
  Monitoring,
  Effect.gen(function*() {
    const stats = yield* CallStats
    const accounts = yield* Accounts
    return Monitoring.of({
      summary: (accountId, window) =>
        Effect.gen(function*() {
          const windowMs = WINDOWS[window]
          const calls = yield* stats.window(accountId, windowMs)
          const account = yield* accounts.get(accountId)
          const now = yield* Clock.currentTimeMillis
          return {
            window,
            from: new Date(now - windowMs),
            to: new Date(now),
            calls,
            payment: paymentHealth(account.balance, account.reserved, calls.spend, windowMs)
          }
        })
    })
  })
)
