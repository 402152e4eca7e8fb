/** The agent management endpoints: shapes in and out; the work is in layers/agents and layers/knowledge. */
import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { Agents } from "../../services/Agents.ts"
import { Unauthorized } from "../../services/ApiError.ts"
import { Knowledge } from "../../services/Knowledge.ts"
import { createAgent } from "../../layers/agents/agentCreation.ts"
import { Api } from "../api/Api.ts"
import { cursorOf, listRecord, pageRequestOf } from "../api/Lists.ts"
import { CurrentPrincipal } from "../api/Security.ts"
import { toAgentRecord, toDocumentRecord } from "./agentRecords.ts"

/** The caller as an account holder (keys with the `agents` scope always belong to one). */
const accountHolder = Effect.flatMap(CurrentPrincipal, (principal) =>
  principal.accountId === null
    ? Effect.fail(new Unauthorized({ message: "This endpoint needs a key of an account, with the \"agents\" scope." }))
    : Effect.succeed({ ...principal, accountId: principal.accountId }))

export const AgentsHandlers = HttpApiBuilder.group(Api, "agents", (handlers) =>
  Effect.gen(function*() {
    const agents = yield* Agents
    const knowledge = yield* Knowledge
    const context = yield* Effect.context<Effect.Effect.Context<ReturnType<typeof createAgent>>>()
    return handlers
      .handle("createAgent", ({ payload }) =>
        Effect.flatMap(accountHolder, (principal) =>
          createAgent(principal, {
            name: payload.name,
            instructions: payload.instructions,
            routing: payload.routing,
            embeddingModel: payload.embedding_model,
            conversationCap: payload.conversation_cap,
            knowledge: payload.knowledge
          }).pipe(Effect.provide(context), Effect.map(toAgentRecord))))
      .handle("listAgents", ({ urlParams }) =>
        Effect.flatMap(accountHolder, ({ accountId }) =>
          Effect.map(agents.list(accountId, pageRequestOf(urlParams)), (page) =>
            listRecord({ items: page.items.map(toAgentRecord), next: page.next }, cursorOf))))
      .handle("getAgent", ({ path }) =>
        Effect.flatMap(accountHolder, ({ accountId }) => Effect.map(agents.get(accountId, path.id), toAgentRecord)))
      .handle("deleteAgent", ({ path }) =>
        Effect.flatMap(accountHolder, ({ accountId }) => Effect.map(agents.remove(accountId, path.id), toAgentRecord)))
      .handle("addDocument", ({ path, payload }) =>
        Effect.flatMap(accountHolder, (principal) =>
          Effect.flatMap(agents.get(principal.accountId, path.id), (agent) =>
            Effect.map(knowledge.ingest(principal, agent, payload), ({ document }) => toDocumentRecord(document)))))
      .handle("listDocuments", ({ path, urlParams }) =>
        Effect.flatMap(accountHolder, ({ accountId }) =>
          Effect.map(agents.listDocuments(accountId, path.id, pageRequestOf(urlParams)), (page) =>
            listRecord({ items: page.items.map(toDocumentRecord), next: page.next }, cursorOf))))
      .handle("deleteDocument", ({ path }) =>
        Effect.flatMap(accountHolder, ({ accountId }) =>
          Effect.map(agents.removeDocument(accountId, path.id, path.documentId), toDocumentRecord)))
  }))
