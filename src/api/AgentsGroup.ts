/**
 * Managing agents and their knowledge (scope `agents`): create, list, get,
 * delete; add, list and delete documents. An agent of another account is 404.
 * Adding a document embeds it on the caller's key: it is billed like an
 * embeddings call, and the document record names its receipt.
 */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { Wire } from "../../services/ApiError.ts"
import { AddDocument, AgentList, AgentRecord, CreateAgent, DocumentList, DocumentRecord } from "./AgentRecords.ts"
import { ListParams } from "./Lists.ts"
import { withEmbeddingErrors } from "./modelCallErrors.ts"
import { documented } from "./operationDocs.ts"
import { AgentsScope } from "./Security.ts"

const AgentPath = Schema.Struct({ id: Schema.String })
const DocumentPath = Schema.Struct({ id: Schema.String, documentId: Schema.String })


export class AgentsGroup extends HttpApiGroup.make("agents")
  .add(
    HttpApiEndpoint.post("createAgent", "/v1/agents")
      .setPayload(CreateAgent)
      .addSuccess(AgentRecord)
      .pipe(withEmbeddingErrors)
      .annotateContext(documented(
        "Create an agent",
        "Instructions, a routing preset checked against the catalogue, and optional knowledge embedded at once (billed)."
      ))
  )
  .add(
    HttpApiEndpoint.get("listAgents", "/v1/agents")
      .setUrlParams(ListParams)
      .addSuccess(AgentList)
      .annotateContext(documented("List agents", "Newest first, a page at a time."))
  )
  .add(
    HttpApiEndpoint.get("getAgent", "/v1/agents/:id")
      .setPath(AgentPath)
      .addSuccess(AgentRecord)
      .addError(Wire.NotFound)
      .annotateContext(documented("Get an agent", "With its conversation and document counts."))
  )
  .add(
    HttpApiEndpoint.del("deleteAgent", "/v1/agents/:id")
      .setPath(AgentPath)
      .addSuccess(AgentRecord)
      .addError(Wire.NotFound)
      .annotateContext(documented("Delete an agent", "With its documents, their chunks and vectors, and its conversations."))
  )
  .add(
    HttpApiEndpoint.post("addDocument", "/v1/agents/:id/documents")
      .setPath(AgentPath)
      .setPayload(AddDocument)
      .addSuccess(DocumentRecord)
      .addError(Wire.NotFound)
      .pipe(withEmbeddingErrors)
      .annotateContext(documented(
        "Add a document",
        "Text or markdown, chunked by headings, paragraphs and size, embedded with the agent's embedding model (billed, with a receipt)."
      ))
  )
  .add(
    HttpApiEndpoint.get("listDocuments", "/v1/agents/:id/documents")
      .setPath(AgentPath)
      .setUrlParams(ListParams)
      .addSuccess(DocumentList)
      .addError(Wire.NotFound)
      .annotateContext(documented("List an agent's documents", "Newest first, a page at a time."))
  )
  .add(
    HttpApiEndpoint.del("deleteDocument", "/v1/agents/:id/documents/:documentId")
      .setPath(DocumentPath)
      .addSuccess(DocumentRecord)
      .addError(Wire.NotFound)
      .annotateContext(documented("Delete a document", "With its chunks and vectors."))
  )
  .annotate(OpenApi.Description, "Managed agents: instructions, a routing preset and knowledge (scope `agents`)")
  .middleware(AgentsScope)
{}
