/**
 * What a chat request asks of a model, and whether a model can serve it:
 * every capability it needs (tools, vision for image parts, structured output
 * for a JSON `response_format`, streaming) and a context that holds the
 * counted input plus the requested output.
 */
import type { Model } from "../../services/Catalogue.ts"
import type { ChatRequest } from "../../services/Chat.ts"
import type { Capability } from "../../services/Config.ts"
import type { RequestShape } from "../../services/Router.ts"

const hasImages = (request: ChatRequest) =>
  request.messages.some((message) =>
    Array.isArray(message.content) && message.content.some((part) => part.type === "image_url")
  )

export const shapeOf = (request: ChatRequest, inputTokens: number): RequestShape => {
  const tools = (request.tools?.length ?? 0) > 0
  const images = hasImages(request)
  const format = request.response_format?.type
  const structuredOutput = format === "json_object" || format === "json_schema"
  const streaming = request.stream === true
  const needs: Array<Capability> = ["chat"]
  if (streaming) needs.push("streaming")
  if (tools) needs.push("tools")
  if (images) needs.push("vision")
  if (structuredOutput) needs.push("structured_output")
  return {
    inputTokens,
    requestedOutput: request.max_completion_tokens ?? request.max_tokens ?? undefined,
    needs,
    streaming,
    tools,
    images,
    structuredOutput,
    reasoning: request.reasoning_effort !== undefined || request.reasoning !== undefined
  }
}

/** Why a model cannot serve a request. */
export type Ineligible =
  | { readonly _tag: "missing"; readonly capabilities: ReadonlyArray<Capability> }
  | { readonly _tag: "context"; readonly needed: number; readonly context: number }

export const ineligibility = (model: Model, shape: RequestShape): Ineligible | undefined => {
  const missing = shape.needs.filter((capability) => !model.capabilities.includes(capability))
  if (missing.length > 0) return { _tag: "missing", capabilities: missing }
  const needed = shape.inputTokens + (shape.requestedOutput ?? 0)
  if (needed > model.context) return { _tag: "context", needed, context: model.context }
  return undefined
}

/** The request field that asks for a capability, for the error's `param`. */
export const paramOf = (capability: Capability): string => {
  switch (capability) {
    case "tools":
      return "tools"
    case "vision":
      return "messages"
    case "structured_output":
      return "response_format"
    case "streaming":
      return "stream"
    default:
      return "model"
  }
}
