/**
 * Creating an agent as `POST /v1/agents` does: the preset checked against the
 * catalogue, the agent stored, then its inline knowledge ingested, document
 * by document. Every document is checked first (Knowledge.check), so bad
 * input is refused before anything is written. If a document cannot be
 * ingested after that (its hold refused, the upstream failing), the agent is
 * deleted again and the call fails: an agent
 * exists with all the knowledge it was created with or not at all. Documents
 * embedded before the failure stay billed, as their receipts say.
 */
import { Effect } from "effect"
import { AgentPresets } from "../../services/AgentPresets.ts"
import { Agents, DEFAULT_CONVERSATION_CAP, type AgentRouting } from "../../services/Agents.ts"
import type { Principal } from "../../services/ApiKeys.ts"
import { InvalidRequest } from "../../services/ApiError.ts"
import { fieldIn } from "../../services/fieldPath.ts"
import { Knowledge } from "../../services/Knowledge.ts"

/** The embeddings model an agent gets when it names none. */
export const DEFAULT_EMBEDDING_MODEL = "svc/embed"

/** The routing preset an agent gets when it names none: the gateway picks a model per run. */
export const DEFAULT_ROUTING: AgentRouting = { model: "auto" }

export interface AgentRequest {
  readonly name: string
  readonly instructions: string
  readonly routing?: AgentRouting | undefined
  readonly embeddingModel?: string | undefined
  readonly conversationCap?: number | undefined
  readonly knowledge?: ReadonlyArray<{ readonly title: string; readonly text: string }> | undefined
}

export const createAgent = (principal: Principal & { readonly accountId: string }, request: AgentRequest) =>
  Effect.gen(function*() {
    const agents = yield* Agents
    const knowledge = yield* Knowledge
    const routing = request.routing ?? DEFAULT_ROUTING
    const embeddingModel = request.embeddingModel ?? DEFAULT_EMBEDDING_MODEL
    yield* (yield* AgentPresets).check(routing, embeddingModel)
    yield* Effect.forEach(request.knowledge ?? [], (document, index) =>
      knowledge.check({ routing }, document).pipe(
        Effect.catchTag("InvalidRequest", (refused) =>
          Effect.fail(new InvalidRequest({ message: refused.message, param: fieldIn(`knowledge[${index}]`, refused.param ?? "") })))
      ), { discard: true })
    const agent = yield* agents.create(principal.accountId, {
      name: request.name,
      instructions: request.instructions,
      routing,
      embeddingModel,
      conversationCap: request.conversationCap ?? DEFAULT_CONVERSATION_CAP
    })
    yield* Effect.forEach(request.knowledge ?? [], (document) => knowledge.ingest(principal, agent, document), { discard: true }).pipe(
      Effect.tapErrorCause(() => agents.remove(principal.accountId, agent.id).pipe(Effect.ignore))
    )
    return request.knowledge === undefined || request.knowledge.length === 0
      ? agent
      : yield* agents.get(principal.accountId, agent.id)
  })
