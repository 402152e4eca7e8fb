/**
 * The part of an agent run that JSON and streamed runs share. Before the
 * hold (`prepare`): the agent and the conversation (404s), the cap checked
 * (429 before anything is held), the history fitted, and the call admitted
 * and planned for its request with a knowledge budget. Under the hold
 * (`ground`): a new conversation's slot taken (atomically, so of runs racing
 * for the last slot one wins), the question embedded (a line item of the
 * run's receipt), the knowledge retrieved, and the request the model gets.
 *
 * Embeddings are served at `standard_route` only, so the question of an agent
 * whose preset asks for a stronger class is not embedded: its knowledge is
 * searched by full text alone, and the question leaves the gateway only for
 * a deployment that earns the class.
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
  /** Where the question is embedded; none when the agent's class keeps it from the embeddings upstream. */
  readonly embedder: EmbeddingTarget | undefined
  readonly call: AdmittedChat
  readonly route: Route
  /** What to hold: the generation's estimate and the query's embedding. */
  readonly amount: Nanos
}

/** A run under its hold, ready for the model. */
export interface GroundedRun {
  readonly conversation: Conversation
  /** The question's embedding, billed before the generation (none when it was not embedded). */
  readonly before: ReadonlyArray<LineItem>
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
    const embedder = embedsQuestion(agent) ? yield* embeddingTarget(services.catalogue, agent.embeddingModel) : undefined
    const queryEstimate = embedder === undefined ? 0n : services.pricing.amount(embedder.model.pricing, {
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
      const query = embedder === undefined ? undefined : yield* embedQuestion(services, embedder, sent.input)
      const found = yield* services.retrieval.search(agent.id, sent.input, query?.vector, DEFAULT_TOP_K)
      const sources = fitSources(found, KNOWLEDGE_TOKENS, services.pricing.countText)
      const request = runRequest(agent, run.history, sources, sent.input)
      const admitted: AdmittedChat = { ...run.call, request, inputTokens: yield* services.pricing.countInputFairly(request) }
      const result: GroundedRun = { conversation, before: query === undefined ? [] : [query.lineItem], sources, admitted }
      return result
    })
    return yield* Effect.onError(grounded, () => discardNew(services, run, conversation))
  })

/** Whether the agent's questions may go to the embeddings upstream (served at `standard_route` only). */
const embedsQuestion = (agent: Agent) => {
  const requested = agent.routing.privacy?.class
  return requested === undefined || requested === "standard_route"
}

/** The question's vector, and its line on the run's receipt. */
const embedQuestion = (services: RunServices, embedder: EmbeddingTarget, question: string) =>
  Effect.map(callEmbedding(embedder, { input: [question] }, services.deadlines), ({ result }) => {
    const usage = { inputTokens: result.promptTokens ?? services.pricing.countText(question), outputTokens: 0 }
    const lineItem: LineItem = {
      step: "query_embedding",
      model: embedder.model.id,
      usage,
      cost: services.pricing.cost(embedder.model, embedder.deployment, usage)
    }
    return { vector: result.embeddings[0]!, lineItem }
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
