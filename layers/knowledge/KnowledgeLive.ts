/**
 * Ingestion: chunk (chunker.ts), embed every chunk in one embeddings call on
 * the caller's key (so it is held, billed and receipted like `POST
 * /v1/embeddings`, and counts against the key's rate limits), then store the
 * document and its chunks in one transaction. A document whose agent was
 * deleted while it was being embedded is not stored; its embedding stays
 * billed, as the receipt says.
 *
 * Embeddings are served at `standard_route` only (layers/gateway/EmbeddingsGatewayLive.ts), so
 * the knowledge of an agent whose preset demands a stronger class (without `bestAvailable` or
 * `allowFallbackToLowerClass`) is refused with 422 rather than embedded below its class.
 */
import { Effect, Layer } from "effect"
import { type Agent, Agents } from "../../services/Agents.ts"
import { InvalidRequest, PrivacyClassUnavailable } from "../../services/ApiError.ts"
import { EmbeddingsGateway } from "../../services/EmbeddingsGateway.ts"
import { Knowledge } from "../../services/Knowledge.ts"
import { chunkText } from "./chunker.ts"

export const KnowledgeLive = Layer.effect(
  Knowledge,
  Effect.gen(function*() {
    const agents = yield* Agents
    const embeddings = yield* EmbeddingsGateway
    /** The document's chunks, or why it is refused before anything is spent. */
    const check = (
      agent: Pick<Agent, "routing">,
      document: { readonly text: string }
    ) =>
      Effect.gen(function*() {
        const privacy = agent.routing.privacy
        if (
          privacy?.class !== undefined && privacy.class !== "standard_route" &&
          privacy.bestAvailable !== true && privacy.allowFallbackToLowerClass !== true
        ) {
          return yield* new PrivacyClassUnavailable({
            message: `Knowledge is embedded at standard_route only; this agent requires ${privacy.class}. ` +
              "Set routing.privacy.allowFallbackToLowerClass to embed its documents at standard_route.",
            param: "routing.privacy.class"
          })
        }
        const chunks = chunkText(document.text)
        if (chunks.length === 0) return yield* new InvalidRequest({ message: "The document has no text.", param: "text" })
        return chunks
      })
    return Knowledge.of({
      check,
      ingest: (principal, agent, { text, title }) =>
        Effect.gen(function*() {
          const chunks = yield* check(agent, { text })
          const { receipt, response } = yield* embeddings.embed({ model: agent.embeddingModel, input: chunks }, principal)
          const document = yield* agents.addDocument(
            agent.accountId,
            agent.id,
            { title, characters: text.length, receiptId: receipt.id },
            chunks.map((chunk, index) => ({ text: chunk, embedding: response.data[index]!.embedding as ReadonlyArray<number> }))
          )
          return { document, receipt }
        })
    })
  })
)
