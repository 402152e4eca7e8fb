/** Agents and their documents as the wire has them (CONTRACT.md "Agents"); shared by the API and the CLI. */
import type { Agent, AgentDocument } from "../../services/Agents.ts"
import type { AgentRecord, DocumentRecord } from "../api/AgentRecords.ts"

export const toAgentRecord = (agent: Agent): typeof AgentRecord.Type => ({
  id: agent.id,
  object: "agent",
  name: agent.name,
  instructions: agent.instructions,
  routing: agent.routing,
  embedding_model: agent.embeddingModel,
  conversation_cap: agent.conversationCap,
  conversation_count: agent.conversationCount,
  document_count: agent.documentCount,
  created_at: agent.createdAt.toISOString()
})

export const toDocumentRecord = (document: AgentDocument): typeof DocumentRecord.Type => ({
  id: document.id,
  object: "agent.document",
  agent_id: document.agentId,
  title: document.title,
  characters: document.characters,
  chunks: document.chunkCount,
  receipt_id: document.receiptId,
  created_at: document.createdAt.toISOString()
})
