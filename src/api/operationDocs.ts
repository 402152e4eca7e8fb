/**
 * What `/openapi.json` says of each operation: a summary and a description,
 * and for a streaming endpoint that its success may also be a server-sent
 * event stream (`stream: true`). HttpApi knows one content type per status,
 * so such an operation's 200 gains a `text/event-stream` entry beside its
 * JSON; any streaming endpoint annotates itself with `streamingEndpoint(...)`,
 * so nothing else needs to know which ones stream.
 */
import { OpenApi } from "@effect/platform"

const withEventStream = (events: string) => (operation: Record<string, any>): Record<string, any> => {
  const ok = operation.responses?.["200"]
  if (ok === undefined) return operation
  const stream = { schema: { type: "string", description: events } }
  return {
    ...operation,
    responses: { ...operation.responses, "200": { ...ok, content: { ...ok.content, "text/event-stream": stream } } }
  }
}

/**
 * OpenAPI annotations of a streaming endpoint: its summary, its description,
 * and `events` describing the frames it sends with `stream: true`.
 */
export const streamingEndpoint = (docs: { readonly summary: string; readonly description: string; readonly events: string }) =>
  OpenApi.annotations({ summary: docs.summary, description: docs.description, transform: withEventStream(docs.events) })

/** OpenAPI annotations of any other endpoint. */
export const documented = (summary: string, description?: string) => OpenApi.annotations({ summary, description })
