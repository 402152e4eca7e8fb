/**
 * Building blocks for unit tests of the call pipeline without a server or a
 * database: models and deployments as values, and adapters that answer from a
 * script (a completion, a stream of text, or a failure per call) and record
 * what they were asked.
 */
import { Effect, Layer, Stream } from "effect"
import { InsufficientFunds } from "../../services/ApiError.ts"
import type { Deployment, Model } from "../../services/Catalogue.ts"
import { type Bill, Ledger, receiptOf, type Reservation, settlingAtOnce } from "../../services/Ledger.ts"
import type { ChatChunk, ChatRequest } from "../../services/Chat.ts"
import type { PrivacyClass, ProviderPrivacy } from "../../services/Config.ts"
import type { Nanos } from "../../services/Money.ts"
import type { TokenUsage } from "../../services/Pricing.ts"
import type { ServedCall } from "../../services/Billing.ts"
import type { AdapterFailure, ProviderAdapter, UpstreamCompletion } from "../../services/Providers.ts"

/** Nano-dollars per million tokens from a USD figure such as 1.5. */
export const usd = (dollars: number): Nanos => BigInt(Math.round(dollars * 1e9))

export const testModel = (id: string, overrides: Partial<Model> = {}): Model => ({
  id,
  name: id,
  context: 32_000,
  pricing: { input: usd(1), output: usd(2) },
  modalities: ["text"],
  capabilities: ["chat", "streaming", "tools"],
  supportedParameters: [],
  quality: 0.5,
  tier: "third_party",
  privacyClasses: ["standard_route"],
  ...overrides
})

/** One scripted answer: a whole completion's text, a stream of text pieces, or a failure. */
export type Scripted =
  | { readonly text: string; readonly usage?: { readonly input: number; readonly output: number } }
  | { readonly pieces: ReadonlyArray<string>; readonly usage?: { readonly input: number; readonly output: number } }
  | { readonly fail: AdapterFailure }

const completionOf = (model: string, text: string, usage?: { input: number; output: number }): UpstreamCompletion => ({
  id: "upstream-id",
  object: "chat.completion",
  created: 0,
  model,
  choices: [{ index: 0, message: { role: "assistant", content: text }, finish_reason: "stop" }],
  ...(usage !== undefined
    ? { usage: { prompt_tokens: usage.input, completion_tokens: usage.output, total_tokens: usage.input + usage.output } }
    : {})
})

const chunkOf = (model: string, content: string | undefined, finish: "stop" | null, usage?: { input: number; output: number }): ChatChunk => ({
  id: "upstream-id",
  object: "chat.completion.chunk",
  created: 0,
  model,
  choices: usage !== undefined ? [] : [{ index: 0, delta: content !== undefined ? { content } : {}, finish_reason: finish }],
  ...(usage !== undefined
    ? { usage: { prompt_tokens: usage.input, completion_tokens: usage.output, total_tokens: usage.input + usage.output } }
    : {})
})

/** An adapter answering each call with the next scripted answer (the last one repeats). */
export const scriptedAdapter = (script: ReadonlyArray<Scripted>) => {
  const calls: Array<ChatRequest> = []
  const next = () => script[Math.min(calls.length - 1, script.length - 1)]!
  const adapter: ProviderAdapter = {
    complete: ({ request, upstreamModel }) =>
      Effect.suspend(() => {
        calls.push(request)
        const answer = next()
        if ("fail" in answer) return Effect.fail(answer.fail)
        const text = "text" in answer ? answer.text : answer.pieces.join("")
        return Effect.succeed(completionOf(upstreamModel, text, answer.usage))
      }),
    stream: ({ request, upstreamModel }) =>
      Effect.suspend(() => {
        calls.push(request)
        const answer = next()
        if ("fail" in answer) return Effect.fail(answer.fail)
        const pieces = "pieces" in answer ? answer.pieces : [answer.text]
        const chunks = [
          ...pieces.map((piece) => chunkOf(upstreamModel, piece, null)),
          chunkOf(upstreamModel, undefined, "stop"),
          ...(answer.usage !== undefined ? [chunkOf(upstreamModel, undefined, null, answer.usage)] : [])
        ]
        return Effect.succeed(Stream.fromIterable(chunks))
      })
  }
  return { adapter, calls }
}

const openPolicy: ProviderPrivacy = { stores: true, logs: true, trains: true, operatorControlled: false }

export const testDeployment = (
  model: Model,
  id: string,
  options: {
    readonly adapter: ProviderAdapter
    readonly cost?: { readonly input: Nanos; readonly output: Nanos }
    readonly classes?: ReadonlyArray<PrivacyClass>
    readonly policy?: ProviderPrivacy
  }
): Deployment => ({
  id,
  model: model.id,
  provider: { id: id.split("/")[0]!, plugin: "scripted", timeoutMs: 1000, deployments: [] },
  upstreamModel: `upstream-${model.id}`,
  cost: options.cost ?? { input: usd(0.5), output: usd(1) },
  privacyClasses: options.classes ?? ["standard_route"],
  policy: options.policy ?? openPolicy,
  weight: 1,
  adapter: options.adapter
})

/** A chat request with one user message. */
export const chatRequest = (overrides: Partial<ChatRequest> = {}): ChatRequest =>
  ({ model: "svc/a", messages: [{ role: "user", content: "hello pipeline" }], ...overrides }) as ChatRequest


/**
 * A ledger that records every reserve, settle and release. `state.available` below an amount
 * refuses it; a reservation made tells `available` less its amount as what is left (the ledger
 * keeps no balance). `state.gate`, while set, is waited on before each reservation answers;
 * `state.atOnce` is what it says of its reservations being answered at once (a credit lease).
 */
export const recordingLedger = (available = usd(100)) => {
  const log: Array<string> = []
  const bills: Array<Bill> = []
  const state: { available: bigint; gate: Effect.Effect<void> | undefined; atOnce: boolean } = {
    available,
    gate: undefined,
    atOnce: false
  }
  let next = 0
  const ledger: Ledger["Type"] = {
    reserve: ({ accountId, amount, requestId }) => {
      const reserved = () => {
        if (amount > state.available) return Effect.fail(new InsufficientFunds({ message: "no" }))
        const reservation: Reservation = {
          id: `rcpt_${++next}`,
          accountId,
          requestId,
          amount,
          reservedAt: new Date(0),
          availableAfter: state.available - amount
        }
        log.push(`reserve ${reservation.id}`)
        return Effect.succeed(reservation)
      }
      // A ledger that answers at once (`reservesAtOnce`) may answer with an Exit when called (services/atOnce.ts).
      if (state.atOnce && state.gate === undefined) return reserved()
      return Effect.zipRight(Effect.suspend(() => state.gate ?? Effect.void), Effect.suspend(reserved))
    },
    settle: (reservation, bill) =>
      Effect.sync(() => {
        log.push(`settle ${reservation.id}`)
        bills.push(bill)
        return receiptOf(reservation, bill, {
          total: bill.cost.total,
          balanceAfter: 0n,
          createdAt: new Date(0),
          settledAt: new Date(0)
        })
      }),
    reservesAtOnce: () => state.atOnce,
    settleQueued: (...args) => settlingAtOnce(ledger.settle)(...args),
    release: (reservation) => Effect.sync(() => void log.push(`release ${reservation.id}`)),
    renew: (reservations) => Effect.sync(() => reservations.forEach((reservation) => log.push(`renew ${reservation.id}`))),
    sweepExpired: () => Effect.succeed(0),
    receipt: () => Effect.die("not used")
  }
  return { layer: Layer.succeed(Ledger, ledger), ledger, log, bills, state }
}

/**
 * A served chat call on `svc/m` ($3/$6 per million tokens, costing $1/$2 upstream) that used
 * 1,000 input and 500 output tokens, as the billing stage is asked to settle it.
 */
export const servedCall = (estimated: TokenUsage = { inputTokens: 1000, outputTokens: 500 }): ServedCall => {
  const model = testModel("svc/m", { pricing: { input: usd(3), output: usd(6) } })
  return {
    endpoint: "/v1/chat/completions",
    model,
    deployment: testDeployment(model, "p/0", { adapter: scriptedAdapter([{ text: "x" }]).adapter, cost: { input: usd(1), output: usd(2) } }),
    usage: { inputTokens: 1000, outputTokens: 500 },
    estimated,
    attempts: [{ model: model.id, outcome: "ok", latencyMs: 5 }],
    privacyClass: "standard_route"
  }
}
