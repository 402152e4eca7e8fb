/**
 * The part of an agent run that JSON and streamed runs share. Before the
 * hold (`prepare`): the agent and the conversation (404s), the cap checked
 * (429 before anything is held), the history fitted, and the call admitted
 * and planned for its request with a knowledge budget. Under the hold
 * (`ground`): a new conversation's slot taken (atomically, so of runs racing
 * for the last slot one wins), the question embedded (a line item of the
 * run's receipt), the knowledge retrieved, and the request the model gets.
 */
import { Effect } from "effect"
import type { Admission, AdmittedChat } from "../../services/Admission.ts"
import type { Agent, Agents } from "../../services/Agents.ts"
import type { RunRequest } from "../../services/AgentRuns.ts"
import { NotFound } from "../../services/ApiError.ts"
import type { Principal } from "../../services/ApiKeys.ts"
import type { CallRecorder } from "../../services/CallRecorder.ts"
import type { Catalogue } from "../../services/Catalogue.ts"
import type { AppConfig } from "../../services/Config.ts"
import type { Conversation, Conversations, Turn } from "../../services/Conversations.ts"
import type { LineItem } from "../../services/Ledger.ts"
import type { Nanos } from "../../services/Money.ts"
import type { Pricing } from "../../services/Pricing.ts"
import { quote } from "../../services/quote.ts"
import { DEFAULT_TOP_K, type Retrieval, type Source } from "../../services/Retrieval.ts"
import type { Route, RoutePlanner } from "../../services/RoutePlanner.ts"
import { callEmbedding, type EmbeddingTarget, embeddingTarget } from "../gateway/embeddingCall.ts"
import { plannedCall } from "../gateway/plannedCall.ts"
import { conversationCapReached } from "./agentRefusals.ts"
import { fitHistory, fitSources, HISTORY_TOKENS, HISTORY_TURNS, KNOWLEDGE_TOKENS, runRequest } from "./runPrompt.ts"

export interface RunServices {
  readonly agents: Agents["Type"]
  readonly conversations: Conversations["Type"]
  readonly retrieval: Retrieval["Type"]
  readonly catalogue: Catalogue["Type"]
  readonly pricing: Pricing["Type"]
  readonly admission: Admission["Type"]
  readonly planner: RoutePlanner["Type"]
  readonly recorder: CallRecorder["Type"]
  readonly deadlines: AppConfig["Type"]["file"]["routing"]["deadline"]
}

/** A run admitted and planned, not yet held for. */
export interface PreparedRun {
  readonly principal: Principal
  readonly sent: RunRequest
  readonly agent: Agent
  /** The conversation continued; none when the run starts one. */
  readonly continued: Conversation | undefined
  readonly history: ReadonlyArray<Turn>
  readonly embedder: EmbeddingTarget
  readonly call: AdmittedChat
  readonly route: Route
  /** What to hold: the generation's estimate and the query's embedding. */
  readonly amount: Nanos
}

/** A run under its hold, ready for the model. */
export interface GroundedRun {
  readonly conversation: Conversation
  readonly embedding: LineItem
  readonly sources: ReadonlyArray<Source>
  /** The call as sent: the request with its knowledge, and its counted input. */
  readonly admitted: AdmittedChat
}

export const prepare = (services: RunServices, principal: Principal, sent: RunRequest) =>
  Effect.gen(function*() {
    const accountId = principal.accountId!
    const agent = yield* services.agents.get(accountId, sent.agent).pipe(
      Effect.mapError(() => new NotFound({ message: `No agent ${quote(sent.agent)}.`, param: "agent" }))
    )
    const continued = sent.conversation_id == null
      ? undefined
      : yield* services.conversations.get(accountId, agent.id, sent.conversation_id)
    if (continued === undefined && agent.conversationCount >= agent.conversationCap) {
      return yield* conversationCapReached(agent.conversationCap)
    }
    const history = continued === undefined
      ? []
      : fitHistory(yield* services.conversations.history(continued.id, HISTORY_TURNS), HISTORY_TOKENS, services.pricing.countText)
    const embedder = yield* embeddingTarget(services.catalogue, agent.embeddingModel)
    const queryEstimate = services.pricing.amount(embedder.model.pricing, {
      inputTokens: services.pricing.countText(sent.input),
      outputTokens: 0
    })
    const { call, route } = yield* plannedCall(services, runRequest(agent, history, [], sent.input), principal, KNOWLEDGE_TOKENS)
    const prepared: PreparedRun = { principal, sent, agent, continued, history, embedder, call, route, amount: route.amount + queryEstimate }
    return prepared
  })

export const ground = (services: RunServices, run: PreparedRun) =>
  Effect.gen(function*() {
    const { agent, embedder, sent } = run
    const conversation = run.continued ?? (yield* services.conversations.start(run.principal.accountId!, agent.id))
    const grounded = Effect.gen(function*() {
      const query = yield* callEmbedding(embedder, { input: [sent.input] }, services.deadlines)
      const usage = { inputTokens: query.result.promptTokens ?? services.pricing.countText(sent.input), outputTokens: 0 }
      const embedding: LineItem = {
        step: "query_embedding",
        model: embedder.model.id,
        usage,
        cost: services.pricing.cost(embedder.model, embedder.deployment, usage)
      }
      const found = yield* services.retrieval.search(agent.id, sent.input, query.result.embeddings[0]!, DEFAULT_TOP_K)
      const sources = fitSources(found, KNOWLEDGE_TOKENS, services.pricing.countText)
      const request = runRequest(agent, run.history, sources, sent.input)
      const admitted: AdmittedChat = { ...run.call, request, inputTokens: yield* services.pricing.countInputFairly(request) }
      const result: GroundedRun = { conversation, embedding, sources, admitted }
      return result
    })
    return yield* Effect.onError(grounded, () => discardNew(services, run, conversation))
  })

/** A conversation the run started, given back (its slot freed) when the run fails. */
export const discardNew = (services: RunServices, run: PreparedRun, conversation: Conversation) =>
  run.continued === undefined ? services.conversations.discard(conversation.id) : Effect.void

/** The run's two turns, kept only when it was served at `standard_route`; the answer's `msg_` id. */
export const keepTurns = (
  services: RunServices & { readonly newMessageId: () => string },
  run: PreparedRun,
  conversation: Conversation,
  output: string,
  receiptId: string
) =>
  run.route.privacy.served !== "standard_route"
    ? Effect.succeed(services.newMessageId())
    : Effect.map(
      services.conversations.append(conversation.id, [
        { role: "user", content: run.sent.input },
        { role: "assistant", content: output, receiptId }
      ]),
      (turns) => turns[1]!.id
    )
