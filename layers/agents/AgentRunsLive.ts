/**
 * An agent run, composed from the chat path's stages (docs/architecture.md):
 *
 *   agent, conversation → Admission → RoutePlanner → Billing.hold (generation + query embedding)
 *     → conversation slot → embed the question → Retrieval → Upstream → Billing.settle (line items)
 *     → turns written
 *
 * The hold is taken before anything is spent, for the request with its
 * history and a knowledge budget (runPrompt.ts), so what retrieval finds is
 * always covered. A new conversation takes its slot under the cap only once
 * the run is held for, and is given back if the run fails. A run that fails
 * bills nothing (its hold is released), as a failed chat call does.
 *
 * Turns are kept only for runs served at `standard_route`: for a stronger
 * class the gateway stores no prompt or answer text, so such a conversation
 * continues without history.
 */
import { Effect, Layer } from "effect"
import { Admission } from "../../services/Admission.ts"
import { AgentRuns } from "../../services/AgentRuns.ts"
import { Agents } from "../../services/Agents.ts"
import { NotFound } from "../../services/ApiError.ts"
import { Billing } from "../../services/Billing.ts"
import { CallRecorder } from "../../services/CallRecorder.ts"
import { Catalogue } from "../../services/Catalogue.ts"
import { AppConfig } from "../../services/Config.ts"
import { Conversations } from "../../services/Conversations.ts"
import { Ids } from "../../services/Ids.ts"
import type { LineItem } from "../../services/Ledger.ts"
import { Pricing } from "../../services/Pricing.ts"
import { PrivacyPolicy } from "../../services/PrivacyPolicy.ts"
import { quote } from "../../services/quote.ts"
import { DEFAULT_TOP_K, Retrieval } from "../../services/Retrieval.ts"
import { RoutePlanner } from "../../services/RoutePlanner.ts"
import { Transcripts } from "../../services/Transcripts.ts"
import { Upstream } from "../../services/Upstream.ts"
import { callEmbedding, embeddingTarget } from "../gateway/embeddingCall.ts"
import { endCompletion } from "../gateway/completionEnd.ts"
import { plannedCall, routesFailed } from "../gateway/plannedCall.ts"
import { conversationCapReached } from "./agentRefusals.ts"
import { fitHistory, fitSources, HISTORY_TOKENS, HISTORY_TURNS, KNOWLEDGE_TOKENS, runRequest } from "./runPrompt.ts"

const ENDPOINT = "/v1/agents/runs"

export const AgentRunsLive = Layer.effect(
  AgentRuns,
  Effect.gen(function*() {
    const agents = yield* Agents
    const conversations = yield* Conversations
    const retrieval = yield* Retrieval
    const catalogue = yield* Catalogue
    const billing = yield* Billing
    const upstream = yield* Upstream
    const recorder = yield* CallRecorder
    const pricing = yield* Pricing
    const deadlines = (yield* AppConfig).file.routing.deadline
    const stages = { admission: yield* Admission, planner: yield* RoutePlanner, recorder }
    const completionServices = {
      billing,
      recorder,
      transcripts: yield* Transcripts,
      upstream,
      pricing,
      privacyPolicy: yield* PrivacyPolicy,
      ids: yield* Ids
    }
    const count = pricing.countText

    return AgentRuns.of({
      run: (principal, sent) =>
        Effect.gen(function*() {
          const accountId = principal.accountId!
          const agent = yield* agents.get(accountId, sent.agent).pipe(
            Effect.mapError(() => new NotFound({ message: `No agent ${quote(sent.agent)}.`, param: "agent" }))
          )
          const continued = sent.conversation_id == null
            ? undefined
            : yield* conversations.get(accountId, agent.id, sent.conversation_id)
          // Refused before anything is held; the slot itself is taken (atomically) once the run is held for.
          if (continued === undefined && agent.conversationCount >= agent.conversationCap) {
            return yield* conversationCapReached(agent.conversationCap)
          }
          const history = continued === undefined
            ? []
            : fitHistory(yield* conversations.history(continued.id, HISTORY_TURNS), HISTORY_TOKENS, count)
          const embedder = yield* embeddingTarget(catalogue, agent.embeddingModel)
          const queryTokens = count(sent.input)
          const queryEstimate = pricing.amount(embedder.model.pricing, { inputTokens: queryTokens, outputTokens: 0 })

          const { call, route } = yield* plannedCall(stages, runRequest(agent, history, [], sent.input), principal, KNOWLEDGE_TOKENS)
          return yield* billing.withHold(principal, route.amount + queryEstimate, (hold) =>
            Effect.gen(function*() {
              const conversation = continued ?? (yield* conversations.start(accountId, agent.id))
              const answer = Effect.gen(function*() {
                const query = yield* callEmbedding(embedder, { input: [sent.input] }, deadlines)
                const queryUsage = { inputTokens: query.result.promptTokens ?? queryTokens, outputTokens: 0 }
                const embedding: LineItem = {
                  step: "query_embedding",
                  model: embedder.model.id,
                  usage: queryUsage,
                  cost: pricing.cost(embedder.model, embedder.deployment, queryUsage)
                }
                const found = yield* retrieval.search(agent.id, sent.input, query.result.embeddings[0]!, DEFAULT_TOP_K)
                const sources = fitSources(found, KNOWLEDGE_TOKENS, count)
                const request = runRequest(agent, history, sources, sent.input)
                const admitted = { ...call, request, inputTokens: yield* pricing.countInputFairly(request) }
                const answered = yield* upstream.complete(route.targets, request).pipe(
                  Effect.catchAll(routesFailed(recorder, admitted, route))
                )
                const { completion, receipt } = yield* endCompletion(
                  completionServices,
                  { admitted, route, hold },
                  answered,
                  { endpoint: ENDPOINT, before: [embedding] }
                )
                return { completion, receipt, sources }
              })
              const { completion, receipt, sources } = yield* continued === undefined
                ? Effect.onError(answer, () => conversations.discard(conversation.id))
                : answer
              const output = completion.choices[0]?.message.content ?? ""
              const served = route.privacy.served
              const [, reply] = served === "standard_route"
                ? yield* conversations.append(conversation.id, [
                  { role: "user", content: sent.input },
                  { role: "assistant", content: output, receiptId: receipt.id }
                ])
                : [undefined, { id: completionServices.ids.make("msg") }]
              return {
                id: reply!.id,
                agentId: agent.id,
                conversationId: conversation.id,
                output,
                sources,
                usage: { inputTokens: receipt.usage.inputTokens, outputTokens: receipt.usage.outputTokens },
                route: { tier: receipt.tier, model: receipt.model },
                privacy: completion.privacy,
                receipt
              }
            }))
        }).pipe(Effect.scoped)
    })
  })
)
