/** A run as the wire has it (spec 2.2 with the privacy block and the receipt id), and its sources as cited. */
import type { RunResult } from "../../services/AgentRuns.ts"
import type { Source } from "../../services/Retrieval.ts"
import type { RunRecord, RunSource } from "../api/AgentRecords.ts"

export const toSourceRecord = (source: Source): typeof RunSource.Type => ({
  documentId: source.documentId,
  chunkId: source.chunkId,
  score: source.score,
  title: source.title,
  text: source.text
})

export const toRunRecord = (run: RunResult): typeof RunRecord.Type => ({
  id: run.id,
  agent_id: run.agentId,
  conversation_id: run.conversationId,
  output: run.output,
  sources: run.sources.map(toSourceRecord),
  usage: { input_tokens: run.usage.inputTokens, output_tokens: run.usage.outputTokens },
  route: run.route,
  privacy: run.privacy,
  receipt_id: run.receipt.id
})
