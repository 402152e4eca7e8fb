/**
 * The operator CLI's view of agents: list an account's agents and their
 * documents, show one, delete an agent (with its documents, chunks and
 * conversations) or a document (with its chunks). Creating agents and adding
 * documents stay with the API: they are billed calls on a customer's key.
 */
import { Args, Command } from "@effect/cli"
import { Effect, type Option } from "effect"
import { Agents } from "../../services/Agents.ts"
import { cursorOf, listRecord } from "../api/Lists.ts"
import { toAgentRecord, toDocumentRecord } from "../handlers/agentRecords.ts"
import type { PageRequest } from "../../services/Pagination.ts"
import { pageFlags } from "./flags.ts"

type Flags = { readonly limit: Option.Option<string>; readonly cursor: Option.Option<string> }

export const agentCommands = (
  output: <A, E>(effect: Effect.Effect<A, E, Agents>) => Effect.Effect<void, unknown>,
  pageOf: (flags: Flags) => Effect.Effect<PageRequest, unknown>
) => {
  const accountId = Args.text({ name: "account_id" }).pipe(Args.withDescription("The account's id (acct_...)"))
  const agentId = Args.text({ name: "agent_id" }).pipe(Args.withDescription("The agent's id (agt_...)"))
  const documentId = Args.text({ name: "document_id" }).pipe(Args.withDescription("The document's id (doc_...)"))
  const described = (description: string) => Command.withDescription(description)

  const list = Command.make("list", { accountId, ...pageFlags }, ({ accountId, ...flags }) =>
    Effect.flatMap(pageOf(flags), (page) =>
      output(Effect.flatMap(Agents, (agents) =>
        Effect.map(agents.list(accountId, page), (found) => listRecord({ items: found.items.map(toAgentRecord), next: found.next }, cursorOf)))))).pipe(
      described("List an account's agents, newest first, a page at a time")
    )

  const show = Command.make("show", { accountId, agentId }, ({ accountId, agentId }) =>
    output(Effect.flatMap(Agents, (agents) => Effect.map(agents.get(accountId, agentId), toAgentRecord)))).pipe(
      described("Print an agent with its preset and its conversation and document counts")
    )

  const remove = Command.make("delete", { accountId, agentId }, ({ accountId, agentId }) =>
    output(Effect.flatMap(Agents, (agents) => Effect.map(agents.remove(accountId, agentId), toAgentRecord)))).pipe(
      described("Delete an agent with its documents, their chunks and vectors, and its conversations")
    )

  const documents = Command.make("documents", { accountId, agentId, ...pageFlags }, ({ accountId, agentId, ...flags }) =>
    Effect.flatMap(pageOf(flags), (page) =>
      output(Effect.flatMap(Agents, (agents) =>
        Effect.map(
          agents.listDocuments(accountId, agentId, page),
          (found) => listRecord({ items: found.items.map(toDocumentRecord), next: found.next }, cursorOf)
        ))))).pipe(described("List an agent's documents, newest first, a page at a time"))

  const removeDocument = Command.make("delete-document", { accountId, agentId, documentId }, ({ accountId, agentId, documentId }) =>
    output(Effect.flatMap(Agents, (agents) => Effect.map(agents.removeDocument(accountId, agentId, documentId), toDocumentRecord)))).pipe(
      described("Delete a document of an agent with its chunks and vectors")
    )

  return Command.make("agents").pipe(
    described("Agents of an account and their knowledge (creating and adding documents go through the API: they are billed)"),
    Command.withSubcommands([list, show, remove, documents, removeDocument])
  )
}
