/**
 * Our neutral request as Gemini's `GenerateContentRequest`: `contents` and
 * `systemInstruction` (`messages.ts`), function declarations with sanitised
 * schemas (`schema.ts`), `toolConfig`, and a `generationConfig` holding the
 * sampling fields Gemini has. Parameters it has no field for are dropped; only
 * one candidate is asked for (`n` can only be 1 in our API). Throws
 * `NotTranslatable`.
 */
import type { ChatRequest, FunctionTool } from "../../../services/Chat.ts"
import type { Json } from "../../support/json.ts"
import { contentsOf } from "./messages.ts"
import { sanitizeSchema } from "./schema.ts"

/** `models/<name>` unless the config already names a resource path (`models/…`, `tunedModels/…`). */
export const modelPathOf = (upstreamModel: string) => (upstreamModel.includes("/") ? upstreamModel : `models/${upstreamModel}`)

/** Gemini refuses an object schema without properties: a tool without parameters simply has none. */
const parametersOf = (parameters: FunctionTool["function"]["parameters"]): Json | undefined => {
  if (parameters === undefined) return undefined
  const schema = sanitizeSchema(parameters)
  return schema.type === "object" && schema.properties === undefined ? undefined : schema
}

const toolsOf = (tools: ReadonlyArray<FunctionTool>): Array<Json> => [{
  functionDeclarations: tools.map(({ function: fn }) => {
    const parameters = parametersOf(fn.parameters)
    return {
      name: fn.name,
      ...(fn.description !== undefined ? { description: fn.description } : {}),
      ...(parameters !== undefined ? { parameters } : {})
    }
  })
}]

const toolConfigOf = (choice: NonNullable<ChatRequest["tool_choice"]>): Json => ({
  functionCallingConfig: choice === "auto"
    ? { mode: "AUTO" }
    : choice === "none"
    ? { mode: "NONE" }
    : choice === "required"
    ? { mode: "ANY" }
    : { mode: "ANY", allowedFunctionNames: [choice.function.name] }
})

const numberField = (u: unknown): number | undefined => (typeof u === "number" && Number.isFinite(u) ? u : undefined)

const generationConfigOf = (request: ChatRequest): Json => {
  const config: Json = {}
  const set = (key: string, value: unknown) => {
    if (value !== undefined && value !== null) config[key] = value
  }
  set("maxOutputTokens", request.max_completion_tokens ?? request.max_tokens)
  set("temperature", request.temperature)
  set("topP", request.top_p)
  // Sampling parameters our API passes through unchecked; Gemini has fields for these.
  set("topK", numberField(request.top_k))
  set("presencePenalty", numberField(request.presence_penalty))
  set("frequencyPenalty", numberField(request.frequency_penalty))
  set("seed", request.seed)
  set("stopSequences", typeof request.stop === "string" ? [request.stop] : request.stop)
  // Our API admits only n = 1.
  if (request.n !== undefined && request.n !== null) config.candidateCount = 1
  const format = request.response_format
  if (format?.type === "json_object" || format?.type === "json_schema") config.responseMimeType = "application/json"
  if (format?.type === "json_schema" && format.json_schema.schema !== undefined) {
    config.responseSchema = sanitizeSchema(format.json_schema.schema)
  }
  return config
}

/** The `GenerateContentRequest`, with the operator's `safetySettings` when the provider's options set some. */
export const generateContentBody = (request: ChatRequest, safetySettings?: ReadonlyArray<Json>): Json => {
  const { system, contents } = contentsOf(request.messages)
  const generationConfig = generationConfigOf(request)
  const tools = request.tools !== undefined && request.tools.length > 0 ? request.tools : undefined
  return {
    contents,
    ...(system.length > 0 ? { systemInstruction: { parts: system } } : {}),
    ...(tools !== undefined ? { tools: toolsOf(tools) } : {}),
    ...(tools !== undefined && request.tool_choice !== undefined ? { toolConfig: toolConfigOf(request.tool_choice) } : {}),
    ...(Object.keys(generationConfig).length > 0 ? { generationConfig } : {}),
    ...(safetySettings !== undefined && safetySettings.length > 0 ? { safetySettings } : {})
  }
}
