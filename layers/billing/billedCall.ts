/** What the chat and embeddings paths share: the model they serve, and how a call is reserved and billed. */
import { Effect, Exit, FiberRef, Option, type Scope } from "effect"
import { currentRequestId, type InsufficientFunds, InvalidRequest } from "../../services/ApiError.ts"
import type { Principal } from "../../services/ApiKeys.ts"
import type { Catalogue, Deployment, Model } from "../../services/Catalogue.ts"
import type { Capability, PrivacyClass } from "../../services/Config.ts"
import type { Ids } from "../../services/Ids.ts"
import type { Attempt, Bill, CallEvent, Ledger, Reservation } from "../../services/Ledger.ts"
import type { Nanos } from "../../services/Money.ts"
import type { Pricing, TokenUsage } from "../../services/Pricing.ts"

/** Embeddings take no privacy envelope: they are served, and receipted, at the standard class. */
export const SERVED_CLASS: PrivacyClass = "standard_route"

/** The listed model a request names, if it has the capability the endpoint needs. */
export const modelFor = (
  catalogue: Catalogue["Type"],
  id: string,
  capability: Capability,
  endpoint: string
): Effect.Effect<Model, InvalidRequest> =>
  Option.match(catalogue.get(id), {
    onNone: () =>
      Effect.fail(
        new InvalidRequest({
          message: `Unknown model "${id}"; GET /v1/models lists the models you can use.`,
          param: "model"
        })
      ),
    onSome: (model) =>
      model.capabilities.includes(capability)
        ? Effect.succeed(model)
        : Effect.fail(new InvalidRequest({ message: `${model.id} does not serve ${endpoint}.`, param: "model" }))
  })

/** Reserves `amount` for the request being served, against the caller's account. */
export const reserveForCaller = (
  ledger: Ledger["Type"],
  ids: Ids["Type"],
  principal: Principal,
  amount: Nanos
): Effect.Effect<Reservation, InsufficientFunds> =>
  Effect.flatMap(FiberRef.get(currentRequestId), (requestId) =>
    ledger.reserve({
      // Keys of the billable scopes always belong to an account; only the operator's bootstrap key has none.
      accountId: principal.accountId!,
      requestId: requestId ?? ids.make("req"),
      amount
    }))

/**
 * Runs `use` on a reservation of `amount`; if `use` fails or is interrupted, the reservation is
 * released (nothing billed). Reserving itself cannot be interrupted half-way.
 */
export const withReservation = <A, E, R>(
  ledger: Ledger["Type"],
  ids: Ids["Type"],
  principal: Principal,
  amount: Nanos,
  use: (reservation: Reservation) => Effect.Effect<A, E, R>
): Effect.Effect<A, E | InsufficientFunds, R> =>
  Effect.acquireUseRelease(
    reserveForCaller(ledger, ids, principal, amount),
    use,
    (reservation, exit) => Exit.isSuccess(exit) ? Effect.void : ledger.release(reservation)
  )

/** A reservation held for the life of the current scope: released when it closes, unless `isClosed()` says it was billed. */
export const scopedReservation = (
  ledger: Ledger["Type"],
  ids: Ids["Type"],
  principal: Principal,
  amount: Nanos,
  isClosed: () => boolean
): Effect.Effect<Reservation, InsufficientFunds, Scope.Scope> =>
  Effect.acquireRelease(
    reserveForCaller(ledger, ids, principal, amount),
    (reservation) => Effect.suspend(() => isClosed() ? Effect.void : ledger.release(reservation))
  )

/** What a call served by `deployment` is billed for. */
export const billOf = (
  pricing: Pricing["Type"],
  endpoint: string,
  model: Model,
  deployment: Deployment,
  usage: TokenUsage,
  attempts: ReadonlyArray<Attempt>,
  events: ReadonlyArray<CallEvent> = [],
  privacyClass: PrivacyClass = SERVED_CLASS
): Bill => ({
  endpoint,
  model: model.id,
  tier: model.tier,
  privacyClass,
  usage,
  price: model.pricing,
  cost: pricing.cost(model, deployment, usage),
  attempts,
  providerId: deployment.provider.id,
  events
})
