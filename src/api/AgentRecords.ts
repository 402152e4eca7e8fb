/** Wire records of agents and their documents (CONTRACT.md "Agents"). */
import { Schema } from "effect"
import { AgentRouting, DEFAULT_CONVERSATION_CAP } from "../../services/Agents.ts"
import { RunRequest } from "../../services/AgentRuns.ts"
import { PrivacyBlockSchema } from "../../services/Chat.ts"
import { MAX_DOCUMENT_CHARACTERS, MAX_DOCUMENT_TITLE } from "../../services/Knowledge.ts"
import { listOf } from "./Lists.ts"

const Timestamp = Schema.String.annotations({ description: "RFC 3339 UTC" })

/** Longest instructions, in characters. */
export const MAX_INSTRUCTIONS = 32_000

/** Most documents given inline at creation (more go through `POST /v1/agents/{id}/documents`). */
export const MAX_INLINE_DOCUMENTS = 20

const Title = Schema.String.pipe(Schema.minLength(1), Schema.maxLength(MAX_DOCUMENT_TITLE))
const DocumentText = Schema.String.pipe(Schema.minLength(1), Schema.maxLength(MAX_DOCUMENT_CHARACTERS))

export const AddDocument = Schema.Struct({
  title: Title,
  /** Plain text or markdown; headings (`#`) and paragraphs shape the chunks. */
  text: DocumentText
}).annotations({ identifier: "AddDocument" })

export const CreateAgent = Schema.Struct({
  name: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200)),
  instructions: Schema.String.pipe(Schema.maxLength(MAX_INSTRUCTIONS)),
  routing: Schema.optional(AgentRouting),
  /** An embeddings model of the catalogue; `svc/embed` unless given. */
  embedding_model: Schema.optional(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200))),
  knowledge: Schema.optional(Schema.Array(AddDocument).pipe(Schema.maxItems(MAX_INLINE_DOCUMENTS))),
  conversation_cap: Schema.optional(Schema.Int.pipe(Schema.between(1, 1_000_000)))
}).annotations({
  identifier: "CreateAgent",
  description: `conversation_cap defaults to ${DEFAULT_CONVERSATION_CAP}; routing to {"model": "auto"}`
})

export const AgentRecord = Schema.Struct({
  id: Schema.String,
  object: Schema.Literal("agent"),
  name: Schema.String,
  instructions: Schema.String,
  routing: AgentRouting,
  embedding_model: Schema.String,
  conversation_cap: Schema.Int,
  conversation_count: Schema.Int,
  document_count: Schema.Int,
  created_at: Timestamp
}).annotations({ identifier: "Agent" })

export const DocumentRecord = Schema.Struct({
  id: Schema.String,
  object: Schema.Literal("agent.document"),
  agent_id: Schema.String,
  title: Schema.String,
  characters: Schema.Int,
  chunks: Schema.Int,
  /** The receipt of the embeddings call that ingested it. */
  receipt_id: Schema.NullOr(Schema.String),
  created_at: Timestamp
}).annotations({ identifier: "AgentDocument" })

export const AgentList = listOf(AgentRecord, "AgentList", "The account's agents, newest first")
export const DocumentList = listOf(DocumentRecord, "AgentDocumentList", "An agent's documents, newest first")

/** A retrieved chunk as a run cites it: the spec's fields, and what a user shows as the citation. */
export const RunSource = Schema.Struct({
  documentId: Schema.String,
  chunkId: Schema.String,
  /** Reciprocal-rank fusion of the full-text and vector rankings; higher is better. */
  score: Schema.Number,
  title: Schema.String,
  /** The chunk's text, as it reached the prompt. */
  text: Schema.String
}).annotations({ identifier: "AgentRunSource" })

/** Spec 2.2, with the privacy block of the class that served it and the run's receipt. */
export const RunRecord = Schema.Struct({
  id: Schema.String,
  agent_id: Schema.String,
  conversation_id: Schema.String,
  output: Schema.String,
  sources: Schema.Array(RunSource),
  usage: Schema.Struct({ input_tokens: Schema.Int, output_tokens: Schema.Int }),
  route: Schema.Struct({ tier: Schema.String, model: Schema.String }),
  privacy: PrivacyBlockSchema,
  /** One receipt for the run, with a line item per billable step. */
  receipt_id: Schema.String
}).annotations({ identifier: "AgentRun" })

/** The deprecated `POST /v1/agents/{agentId}/chat`: a run with the agent in the path. */
export const LegacyAgentChat = Schema.Struct({
  input: RunRequest.fields.input,
  conversation_id: RunRequest.fields.conversation_id
}).annotations({ identifier: "LegacyAgentChatRequest" })
