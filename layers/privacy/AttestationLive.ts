/**
 * The `Attestation` service: a verdict per provider, cached until it lapses,
 * refreshed in the background shortly before (when it was used), failing
 * closed. One verification per provider at a time: concurrent callers share
 * it. A refusal is remembered for its `retryAfterSeconds`, so a runtime that
 * is down is not asked on every call. The verifier is the one the block's
 * `kind` names in `AttestationVerifiers`.
 */
import { randomBytes } from "node:crypto"
import { Clock, Deferred, Effect, Either, Exit, FiberId, Layer } from "effect"
import {
  Attestation,
  type AttestationConfig,
  AttestationRefused,
  AttestationVerifiers,
  type BoundVerifier,
  type Verdict,
  verdictExpiry,
  verifierFor
} from "../../services/Attestation.ts"

export interface AttestationLiveOptions {
  /** A used verdict is refreshed this long before it lapses; at most a fifth of its lifetime. Default 30. */
  readonly refreshLeadSeconds?: number
}

interface Entry {
  /** The attestation config this entry was verified against; another config starts afresh. */
  readonly fingerprint: string
  /** The block's verifier with its options, or why the block names none (checked at start too). */
  readonly verify: Either.Either<BoundVerifier, AttestationRefused>
  verdict: Verdict | undefined
  /** The current verdict was handed to a caller: worth refreshing before it lapses. */
  handedOut: boolean
  refusal: { readonly error: AttestationRefused; readonly until: number } | undefined
  inflight: Deferred.Deferred<Verdict, AttestationRefused> | undefined
}

const randomId = () => randomBytes(16).toString("base64url")

export const makeAttestation = (options: AttestationLiveOptions = {}) =>
  Effect.gen(function*() {
    const verifiers = yield* AttestationVerifiers
    const scope = yield* Effect.scope
    const leadMs = (options.refreshLeadSeconds ?? 30) * 1000
    const entries = new Map<string, Entry>()

    const entryFor = (providerId: string, config: AttestationConfig): Entry => {
      const fingerprint = JSON.stringify(config)
      const existing = entries.get(providerId)
      if (existing !== undefined && existing.fingerprint === fingerprint) return existing
      const verify = Either.mapLeft(verifierFor(verifiers, config), ({ field, reason }) =>
        new AttestationRefused({
          reason: "verifier_unreachable",
          retryAfterSeconds: 60,
          detail: `attestation.${field}: ${reason}`
        }))
      const entry: Entry = { fingerprint, verify, verdict: undefined, handedOut: false, refusal: undefined, inflight: undefined }
      entries.set(providerId, entry)
      return entry
    }
    const isCurrent = (providerId: string, entry: Entry) => entries.get(providerId) === entry

    /** Verifies now (or joins the verification under way); the work runs in the layer's scope. */
    const verifyNow = (providerId: string, entry: Entry, config: AttestationConfig) =>
      Effect.suspend(() => {
        if (entry.inflight !== undefined) return Deferred.await(entry.inflight)
        const deferred = Deferred.unsafeMake<Verdict, AttestationRefused>(FiberId.none)
        entry.inflight = deferred
        const job = Effect.gen(function*() {
          const exit = yield* Effect.exit(Either.match(entry.verify, {
            onLeft: Effect.fail,
            onRight: (verify) => verify(randomId())
          }))
          const now = yield* Clock.currentTimeMillis
          const result = Exit.map(exit, (claims): Verdict => ({
            id: `att_${randomId()}`,
            measurement: claims.measurement,
            verifiedAt: new Date(now),
            expiresAt: verdictExpiry(config, claims)
          }))
          if (isCurrent(providerId, entry)) {
            if (Exit.isSuccess(result)) {
              entry.verdict = result.value
              entry.handedOut = false
              entry.refusal = undefined
              yield* scheduleRefresh(providerId, entry, config, result.value)
            } else {
              const error = result.cause._tag === "Fail" ? result.cause.error : undefined
              if (error !== undefined) entry.refusal = { error, until: now + error.retryAfterSeconds * 1000 }
            }
          }
          entry.inflight = undefined
          yield* Deferred.done(deferred, result)
        }).pipe(
          Effect.onInterrupt(() =>
            Effect.suspend(() => {
              entry.inflight = undefined
              return Deferred.interrupt(deferred)
            })
          )
        )
        return Effect.forkIn(job, scope).pipe(Effect.zipRight(Deferred.await(deferred)))
      })

    /**
     * Refreshes `verdict` shortly before it lapses, if it was used; a failed
     * refresh is tried again after its `retryAfterSeconds` while the verdict holds.
     */
    const scheduleRefresh = (providerId: string, entry: Entry, config: AttestationConfig, verdict: Verdict) => {
      const lifetime = verdict.expiresAt.getTime() - verdict.verifiedAt.getTime()
      const refreshAt = verdict.expiresAt.getTime() - Math.min(leadMs, lifetime / 5)
      const stillWanted = Effect.map(
        Clock.currentTimeMillis,
        (now) =>
          isCurrent(providerId, entry) && entry.verdict === verdict && entry.handedOut && now < verdict.expiresAt.getTime()
      )
      const attempt: Effect.Effect<void> = Effect.gen(function*() {
        if (!(yield* stillWanted)) return
        const exit = yield* Effect.exit(verifyNow(providerId, entry, config))
        if (Exit.isFailure(exit) && exit.cause._tag === "Fail") {
          yield* Effect.sleep(Math.max(1, exit.cause.error.retryAfterSeconds) * 1000)
          yield* attempt
        }
      })
      return Clock.currentTimeMillis.pipe(
        Effect.flatMap((now) => Effect.sleep(Math.max(0, refreshAt - now))),
        Effect.zipRight(attempt),
        Effect.forkIn(scope),
        Effect.asVoid
      )
    }

    const verdict = (providerId: string, config: AttestationConfig): Effect.Effect<Verdict, AttestationRefused> =>
      Effect.gen(function*() {
        const entry = entryFor(providerId, config)
        const now = yield* Clock.currentTimeMillis
        const cached = entry.verdict
        if (cached !== undefined && now < cached.expiresAt.getTime()) {
          entry.handedOut = true
          return cached
        }
        // Fail closed: no fresh verdict is no verdict.
        entry.verdict = undefined
        const refusal = entry.refusal
        if (refusal !== undefined && now < refusal.until) {
          return yield* Effect.fail(
            new AttestationRefused({
              reason: refusal.error.reason,
              detail: refusal.error.detail,
              retryAfterSeconds: Math.max(1, Math.ceil((refusal.until - now) / 1000))
            })
          )
        }
        const fresh = yield* verifyNow(providerId, entry, config)
        if (entry.verdict === fresh) entry.handedOut = true
        return fresh
      })

    return Attestation.of({ verdict })
  })

/** The `Attestation` service; needs the verifier registry, filled by plugins/attestation/index.ts. */
export const AttestationLive = (options: AttestationLiveOptions = {}): Layer.Layer<Attestation, never, AttestationVerifiers> =>
  Layer.scoped(Attestation, makeAttestation(options))
