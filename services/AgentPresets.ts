/**
 * Whether an agent's routing preset and embedding model can be served by
 * this gateway's catalogue, checked when the agent is created so that a typo
 * is a 400 then, not on every run.
 */
import { Context, type Effect } from "effect"
import type { AgentRouting } from "./Agents.ts"
import type { InvalidRequest } from "./ApiError.ts"

export class AgentPresets extends Context.Tag("svc/AgentPresets")<AgentPresets, {
  /** Fails naming the field (`routing.model`, `routing.models[1]`, `routing.privacy.class`, `embedding_model`). */
  readonly check: (routing: AgentRouting, embeddingModel: string) => Effect.Effect<void, InvalidRequest>
}>() {}
