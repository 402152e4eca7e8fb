/**
 * Plugin for Google's Gemini API (`generateContent`, `streamGenerateContent`
 * with `alt=sse`, `batchEmbedContents`). Requests are translated from the
 * OpenAI chat shape into Gemini's `contents`; answers are rebuilt from known
 * fields only, so nothing Gemini-specific (model version, response id, safety
 * ratings) reaches our callers.
 *
 * Limits of the translation: only the first candidate is used (`n` can only be
 * 1 in our API, sent as `candidateCount: 1`); parameters Gemini has no field
 * for are dropped rather than forwarded; thought parts are never returned.
 */
import type { Readable } from "node:stream"
import { countTokens } from "gpt-tokenizer/encoding/o200k_base"
import { Effect, Stream } from "effect"
import type {
  ChatChunk,
  ChatRequest,
  ContentPart,
  FinishReason,
  FunctionTool,
  Message,
  ToolCall,
  ToolCallDelta,
  Usage
} from "../services/Chat.ts"
import type { ProviderConfig } from "../services/Config.ts"
import type { EmbedCall, EmbedResult } from "../services/Embeddings.ts"
import {
  type ProviderAdapter,
  type ProviderPlugin,
  registerPlugin,
  type UpstreamCall,
  type UpstreamCompletion,
  UpstreamFailure
} from "../services/Providers.ts"
import { NoOptions } from "../services/Registry.ts"
import {
  arrayOf,
  errorKindOf,
  fail,
  intOr,
  isRecord,
  type Json,
  Malformed,
  nowSeconds,
  protocolFailure,
  protocolFailureOf,
  recordOf,
  stringOr
} from "./support/json.ts"
import { type SseEvent, sseStream, type Translation } from "./support/sse.ts"
import { apiKeyOf, baseUrlOf, makeUpstreamHttp, requestHeaders } from "./support/upstreamHttp.ts"

const DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com/v1beta"

/**
 * Gemini 3 refuses replayed function calls without the thought signature it
 * attached to them; OpenAI-shaped history cannot carry one (and exposing it
 * would name the upstream), so replayed calls get the placeholder Google
 * documents for histories that have none.
 */
const REPLAYED_CALL_SIGNATURE = "skip_thought_signature_validator"

// ---- request -------------------------------------------------------------

/** A request Gemini cannot express: refused before anything is sent, as a 400 (the caller's to fix). */
class Untranslatable extends Error {}

const untranslatable = (reason: string): never => {
  throw new Untranslatable(reason)
}

const refusalOf = (error: unknown) =>
  new UpstreamFailure({
    kind: "status",
    status: 400,
    detail: `not sent to the upstream: ${error instanceof Error ? error.message : String(error)}`
  })

/** `models/<name>` unless the config already names a resource path (`models/…`, `tunedModels/…`). */
const modelPathOf = (upstreamModel: string) => (upstreamModel.includes("/") ? upstreamModel : `models/${upstreamModel}`)

type TextContent = string | ReadonlyArray<{ readonly text: string }> | null | undefined

const textOf = (content: TextContent): string =>
  typeof content === "string" ? content : (content ?? []).map((part) => part.text).join("")

const IMAGE_TYPES: Record<string, string> = {
  png: "image/png",
  jpg: "image/jpeg",
  jpeg: "image/jpeg",
  gif: "image/gif",
  webp: "image/webp",
  heic: "image/heic",
  heif: "image/heif"
}

/** `data:[<type>][;base64],<payload>` as Gemini's `inlineData` (which wants base64). */
const inlineDataOf = (url: string, fallbackType: string): Json => {
  const comma = url.indexOf(",")
  if (comma < 0) return untranslatable("a data: URL without a comma")
  const [mimeType, ...params] = url.slice("data:".length, comma).split(";")
  const payload = url.slice(comma + 1)
  const data = params.includes("base64") ? payload : Buffer.from(decodeURIComponent(payload), "utf8").toString("base64")
  return { inlineData: { mimeType: mimeType || fallbackType, data } }
}

const imagePartOf = (url: string): Json => {
  if (url.startsWith("data:")) return inlineDataOf(url, "image/jpeg")
  if (!/^https?:\/\//i.test(url)) return untranslatable("image URLs must be data: or http(s) URLs")
  const extension = /\.([A-Za-z0-9]+)$/.exec(url.split(/[?#]/)[0])?.[1]?.toLowerCase()
  return { fileData: { fileUri: url, mimeType: (extension && IMAGE_TYPES[extension]) || "image/jpeg" } }
}

const userPartOf = (part: ContentPart): Json => {
  switch (part.type) {
    case "text":
      return { text: part.text }
    case "image_url":
      return imagePartOf(part.image_url.url)
    case "input_audio": {
      const audio = isRecord(part.input_audio) ? part.input_audio : {}
      if (typeof audio.data !== "string") return untranslatable("input_audio without data")
      return { inlineData: { mimeType: `audio/${stringOr(audio.format, "wav")}`, data: audio.data } }
    }
    case "file": {
      // Only inline files travel: an OpenAI file id means nothing to Gemini.
      const file = isRecord(part.file) ? part.file : {}
      if (typeof file.file_data !== "string" || !file.file_data.startsWith("data:")) {
        return untranslatable("file parts must carry file_data as a data: URL")
      }
      return inlineDataOf(file.file_data, "application/octet-stream")
    }
  }
}

/** Gemini wants an object for both call arguments and function results. */
const parsedJson = (text: string): { readonly ok: true; readonly value: unknown } | { readonly ok: false } => {
  try {
    return { ok: true, value: JSON.parse(text) }
  } catch {
    return { ok: false }
  }
}

const callArgsOf = (call: ToolCall): Json => {
  const parsed = parsedJson(call.function.arguments === "" ? "{}" : call.function.arguments)
  return parsed.ok && isRecord(parsed.value)
    ? parsed.value
    : untranslatable(`arguments of tool call ${call.id} are not a JSON object`)
}

const functionResultOf = (text: string): Json => {
  const parsed = parsedJson(text)
  if (!parsed.ok) return { result: text }
  return isRecord(parsed.value) ? parsed.value : { result: parsed.value }
}

interface Content {
  readonly role: "user" | "model"
  readonly parts: Array<Json>
}

/** System text, and the turns with consecutive same-role turns merged (Gemini wants them alternating). */
const contentsOf = (messages: ReadonlyArray<Message>) => {
  const system: Array<Json> = []
  const contents: Array<Content> = []
  // Gemini answers a call by function name; a later call reusing an id wins, as in the conversation.
  const toolNames = new Map<string, string>()
  const add = (role: Content["role"], parts: Array<Json>) => {
    if (parts.length === 0) return
    const last = contents.at(-1)
    if (last?.role === role) last.parts.push(...parts)
    else contents.push({ role, parts })
  }
  for (const message of messages) {
    switch (message.role) {
      case "system":
      case "developer": {
        const text = textOf(message.content)
        if (text !== "") system.push({ text })
        break
      }
      case "user":
        add(
          "user",
          typeof message.content === "string"
            ? (message.content === "" ? [] : [{ text: message.content }])
            : message.content.filter((part) => part.type !== "text" || part.text !== "").map(userPartOf)
        )
        break
      case "assistant": {
        const text = textOf(message.content)
        const calls = (message.tool_calls ?? []).map((call): Json => {
          toolNames.set(call.id, call.function.name)
          return {
            functionCall: { name: call.function.name, args: callArgsOf(call) },
            thoughtSignature: REPLAYED_CALL_SIGNATURE
          }
        })
        add("model", [...(text === "" ? [] : [{ text }]), ...calls])
        break
      }
      case "tool": {
        const name = toolNames.get(message.tool_call_id) ??
          untranslatable(`tool message answers unknown tool_call_id ${message.tool_call_id}`)
        add("user", [{ functionResponse: { name, response: functionResultOf(textOf(message.content)) } }])
        break
      }
    }
  }
  return { system, contents }
}

/** Schema keywords Gemini's OpenAPI-subset `Schema` accepts as they are. */
const KEPT_SCHEMA_KEYS = new Set([
  "title",
  "description",
  "nullable",
  "enum",
  "required",
  "minItems",
  "maxItems",
  "minProperties",
  "maxProperties",
  "minLength",
  "maxLength",
  "pattern",
  "minimum",
  "maximum",
  "default",
  "example",
  "propertyOrdering"
])
/** The only string formats Gemini accepts; others are refused with a 400. */
const STRING_FORMATS = new Set(["enum", "date-time"])
/** Deeper than this a recursive `$ref` is cut off (Gemini has no references). */
const MAX_SCHEMA_DEPTH = 16

const resolveRef = (root: unknown, ref: string): unknown => {
  if (!ref.startsWith("#")) return {}
  let node: unknown = root
  for (const raw of ref.slice(1).split("/").filter(Boolean)) {
    node = isRecord(node) ? node[decodeURIComponent(raw).replace(/~1/g, "/").replace(/~0/g, "~")] : undefined
  }
  return node ?? {}
}

/** Shallow merge for `allOf`: properties and required lists are combined. */
const mergeSchemas = (a: Json, b: Json): Json => {
  const out: Json = { ...a, ...b }
  if (isRecord(a.properties) && isRecord(b.properties)) out.properties = { ...a.properties, ...b.properties }
  if (Array.isArray(a.required) && Array.isArray(b.required)) out.required = [...new Set([...a.required, ...b.required])]
  return out
}

/**
 * A JSON Schema as Gemini's schema subset: local `$ref`s inlined, `allOf`
 * merged, `oneOf` as `anyOf`, `const` as a one-value `enum`, type unions with
 * "null" as `nullable`, and every keyword Gemini rejects (`additionalProperties`,
 * `$schema`, `$defs`, `strict`, ...) dropped, recursively.
 */
export const sanitizeSchema = (schema: unknown, root: unknown = schema, depth = 0): Json => {
  if (!isRecord(schema) || depth > MAX_SCHEMA_DEPTH) return {}
  const { $ref, allOf, ...rest } = schema
  let source: Json = rest
  if (typeof $ref === "string") source = { ...sanitizeSchema(resolveRef(root, $ref), root, depth + 1), ...source }
  if (Array.isArray(allOf)) {
    source = allOf.reduce<Json>((acc, member) => mergeSchemas(acc, sanitizeSchema(member, root, depth + 1)), source)
  }
  const out: Json = {}
  for (const [key, value] of Object.entries(source)) {
    if (KEPT_SCHEMA_KEYS.has(key)) out[key] = value
    else if (key === "type") {
      const types = Array.isArray(value) ? value : [value]
      const named = types.find((type) => type !== "null")
      if (typeof named === "string") out.type = named
      if (types.includes("null")) out.nullable = true
    } else if (key === "properties" && isRecord(value)) {
      const properties = Object.entries(value).map(([name, member]) => [name, sanitizeSchema(member, root, depth + 1)])
      if (properties.length > 0) out.properties = Object.fromEntries(properties)
    } else if (key === "items" && (isRecord(value) || Array.isArray(value))) {
      // A tuple's first item schema is the closest Gemini can say.
      out.items = sanitizeSchema(Array.isArray(value) ? value[0] : value, root, depth + 1)
    } else if ((key === "anyOf" || key === "oneOf") && Array.isArray(value)) {
      out.anyOf = value.map((member) => sanitizeSchema(member, root, depth + 1))
    } else if (key === "const") out.enum = [value]
    else if (key === "format") out.format = value
  }
  if (out.type === undefined && out.properties !== undefined) out.type = "object"
  if (out.type === "string" && typeof out.format === "string" && !STRING_FORMATS.has(out.format)) delete out.format
  return out
}

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

/** The `GenerateContentRequest`; throws `Untranslatable`. */
const generateContentBody = (request: ChatRequest): Json => {
  const { system, contents } = contentsOf(request.messages)
  const generationConfig = generationConfigOf(request)
  const tools = request.tools !== undefined && request.tools.length > 0 ? request.tools : undefined
  return {
    contents,
    ...(system.length > 0 ? { systemInstruction: { parts: system } } : {}),
    ...(tools !== undefined ? { tools: toolsOf(tools) } : {}),
    ...(tools !== undefined && request.tool_choice !== undefined ? { toolConfig: toolConfigOf(request.tool_choice) } : {}),
    ...(Object.keys(generationConfig).length > 0 ? { generationConfig } : {})
  }
}

// ---- response normalisation (plain field picking: this is the hot path) --

const FILTERED = new Set(["SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY"])

const finishReasonOf = (u: unknown, calledTools: boolean): FinishReason | null => {
  if (u === undefined || u === null) return null
  if (u === "MAX_TOKENS") return "length"
  if (typeof u === "string" && FILTERED.has(u)) return "content_filter"
  // Gemini says STOP after function calls too; OpenAI clients look for tool_calls.
  return calledTools ? "tool_calls" : "stop"
}

/** Thinking tokens are generated and billed as output, like OpenAI's reasoning tokens. */
const usageOf = (u: unknown): Usage | undefined => {
  if (!isRecord(u) || !Number.isInteger(u.promptTokenCount)) return undefined
  const prompt_tokens = (u.promptTokenCount as number) + intOr(u.toolUsePromptTokenCount, 0)
  const completion_tokens = intOr(u.candidatesTokenCount, 0) + intOr(u.thoughtsTokenCount, 0)
  return { prompt_tokens, completion_tokens, total_tokens: prompt_tokens + completion_tokens }
}

/** Throws if the body is an upstream error report rather than a response. */
const rejectErrorBody = (json: Json) => {
  if (json.error !== undefined && json.error !== null && json.candidates === undefined) {
    throw new Malformed(`upstream reported an error (${errorKindOf(json.error)})`)
  }
}

/** No candidates because the prompt itself was blocked. */
const promptBlocked = (json: Json) => isRecord(json.promptFeedback) && typeof json.promptFeedback.blockReason === "string"

interface FunctionCall {
  readonly name: string
  readonly args: unknown
}

interface Reply {
  readonly text: string
  readonly calls: ReadonlyArray<FunctionCall>
  readonly finishReason: unknown
}

/** The first candidate's text (thought summaries left out) and function calls. */
const replyOf = (json: Json): Reply | undefined => {
  const candidates = json.candidates === undefined ? [] : arrayOf(json.candidates, "candidates")
  if (candidates.length === 0) return undefined
  const candidate = recordOf(candidates[0], "candidate")
  const content = isRecord(candidate.content) ? candidate.content : {}
  let text = ""
  const calls: Array<FunctionCall> = []
  for (const u of content.parts === undefined ? [] : arrayOf(content.parts, "parts")) {
    const part = recordOf(u, "part")
    if (typeof part.text === "string" && part.thought !== true) text += part.text
    if (isRecord(part.functionCall)) {
      const name = stringOr(part.functionCall.name, "") || fail("function call without a name")
      calls.push({ name, args: part.functionCall.args ?? {} })
    }
  }
  return { text, calls, finishReason: candidate.finishReason }
}

/** Gemini's calls have no ids; ours are numbered per answer. */
const toolCallOf = (call: FunctionCall, i: number): ToolCall => ({
  id: `call_${i}`,
  type: "function",
  function: { name: call.name, arguments: JSON.stringify(call.args) }
})

const completionOf = (u: unknown, fallbackModel: string): UpstreamCompletion => {
  const json = recordOf(u, "response")
  rejectErrorBody(json)
  const usage = usageOf(json.usageMetadata)
  const reply = replyOf(json)
  if (reply === undefined && !promptBlocked(json)) throw new Malformed("response has no candidates")
  const calls = reply?.calls ?? []
  return {
    // The gateway gives the answer its own id; Gemini's responseId would only name the upstream.
    id: "",
    object: "chat.completion",
    created: nowSeconds(),
    model: fallbackModel,
    choices: [{
      index: 0,
      message: {
        role: "assistant",
        content: calls.length > 0 && reply?.text === "" ? null : reply?.text ?? "",
        ...(calls.length > 0 ? { tool_calls: calls.map(toolCallOf) } : {})
      },
      finish_reason: reply === undefined ? "content_filter" : finishReasonOf(reply.finishReason, calls.length > 0) ?? "stop"
    }],
    ...(usage ? { usage } : {})
  }
}

// ---- SSE -----------------------------------------------------------------

/**
 * Chat chunks from Gemini's SSE frames, each a whole `GenerateContentResponse`.
 * Gemini sends no end marker: the body's end completes the stream, and it is
 * complete only if some frame gave a finish reason (else it was cut off).
 */
const chunksOf = (body: Readable, fallbackModel: string): Stream.Stream<ChatChunk, UpstreamFailure> => {
  const created = nowSeconds()
  let sentRole = false
  let toolCalls = 0
  let finished = false
  let usage: Usage | undefined
  const chunk = (choices: ChatChunk["choices"], extra: Partial<ChatChunk> = {}): ChatChunk => ({
    id: "",
    object: "chat.completion.chunk",
    created,
    model: fallbackModel,
    choices,
    ...extra
  })

  const translate = (event: SseEvent): Translation<ChatChunk> => {
    if (event.event === "error") throw new Malformed("upstream sent an error event")
    if (event.event !== "message" || event.data === "") return { out: [], done: false }
    const json = recordOf(JSON.parse(event.data), "stream frame")
    rejectErrorBody(json)
    // Counts are cumulative: the last one seen is the answer's.
    usage = usageOf(json.usageMetadata) ?? usage
    if (finished) return { out: [], done: false }
    const reply = replyOf(json)
    if (reply === undefined) {
      if (!promptBlocked(json)) return { out: [], done: false }
      finished = true
      const role = sentRole ? {} : { role: "assistant" as const }
      sentRole = true
      return { out: [chunk([{ index: 0, delta: { ...role, content: "" }, finish_reason: "content_filter" }])], done: false }
    }
    const deltas = reply.calls.map((call): ToolCallDelta => {
      const index = toolCalls++
      return { index, id: `call_${index}`, type: "function", function: { name: call.name, arguments: JSON.stringify(call.args) } }
    })
    const finishReason = finishReasonOf(reply.finishReason, toolCalls > 0)
    finished = finishReason !== null
    if (reply.text === "" && deltas.length === 0 && finishReason === null) return { out: [], done: false }
    const delta: ChatChunk["choices"][number]["delta"] = {
      ...(sentRole ? {} : { role: "assistant" as const }),
      // The first chunk carries content like OpenAI's: "" before text, null before tool calls.
      ...(reply.text !== "" ? { content: reply.text } : sentRole ? {} : { content: deltas.length > 0 ? null : "" }),
      ...(deltas.length > 0 ? { tool_calls: deltas } : {})
    }
    sentRole = true
    return { out: [chunk([{ index: 0, delta, finish_reason: finishReason }])], done: false }
  }

  const end = Stream.suspend(() =>
    !finished
      ? Stream.fail(protocolFailure("upstream stream ended without a finish reason"))
      : usage !== undefined
      ? Stream.make(chunk([], { usage }))
      : Stream.empty
  )
  return sseStream(body, translate, { endMarker: false }).pipe(Stream.concat(end))
}

// ---- embeddings ------------------------------------------------------------

/** User text may contain `<|endoftext|>` and the like: count it as plain text. */
const PLAIN_TEXT = { disallowedSpecial: new Set<string>() }

const embeddingsBody = (call: EmbedCall): Json => {
  const model = modelPathOf(call.upstreamModel)
  return {
    requests: call.input.map((text) => ({
      model,
      content: { parts: [{ text }] },
      ...(call.dimensions !== undefined ? { outputDimensionality: call.dimensions } : {})
    }))
  }
}

const vectorOf = (u: unknown): Array<number> =>
  arrayOf(u, "embedding values").map((value) => {
    if (typeof value === "number" && Number.isFinite(value)) return value
    throw new Malformed("embedding holds a value that is not a finite number")
  })

const embeddingsOf = (u: unknown, input: ReadonlyArray<string>): EmbedResult => {
  const json = recordOf(u, "embeddings response")
  if (json.error !== undefined && json.error !== null && json.embeddings === undefined) {
    throw new Malformed(`upstream reported an error (${errorKindOf(json.error)})`)
  }
  const items = arrayOf(json.embeddings, "embeddings")
  if (items.length !== input.length) throw new Malformed(`${items.length} embeddings for ${input.length} inputs`)
  return {
    embeddings: items.map((item) => vectorOf(recordOf(item, "embedding").values)),
    // Gemini reports no token usage for embeddings: we bill on our own o200k_base count,
    // the tokenizer the gateway's estimates use.
    promptTokens: input.reduce((sum, text) => sum + (text === "" ? 0 : countTokens(text, PLAIN_TEXT)), 0)
  }
}

// ---- adapter -------------------------------------------------------------

const make = (provider: ProviderConfig, env: Readonly<Record<string, string | undefined>>) =>
  Effect.gen(function*() {
    const { basePath, origin } = yield* baseUrlOf(provider, "gemini", DEFAULT_BASE_URL)
    const apiKey = yield* apiKeyOf(provider, env)
    const http = yield* makeUpstreamHttp(origin, provider.timeoutMs)
    // The key goes in a header, never in the URL (URLs end up in logs).
    const { json: jsonHeaders, sse: sseHeaders } = requestHeaders(apiKey ? { "x-goog-api-key": apiKey } : {})
    const pathFor = (upstreamModel: string, method: string) => `${basePath}/${modelPathOf(upstreamModel)}:${method}`
    const bodyFor = (call: UpstreamCall) => Effect.try({ try: () => generateContentBody(call.request), catch: refusalOf })

    const complete: ProviderAdapter["complete"] = (call) =>
      Effect.scoped(
        Effect.gen(function*() {
          const body = yield* bodyFor(call)
          const response = yield* http.post(pathFor(call.upstreamModel, "generateContent"), body, jsonHeaders)
          const text = yield* http.text(response)
          return yield* Effect.try({
            try: () => completionOf(JSON.parse(text), call.upstreamModel),
            catch: protocolFailureOf
          })
        })
      )

    const stream: ProviderAdapter["stream"] = (call) =>
      Effect.gen(function*() {
        const body = yield* bodyFor(call)
        const response = yield* http.post(pathFor(call.upstreamModel, "streamGenerateContent?alt=sse"), body, sseHeaders)
        return chunksOf(response.body, call.upstreamModel)
      })

    const embed: NonNullable<ProviderAdapter["embed"]> = (call) =>
      Effect.scoped(
        Effect.gen(function*() {
          const response = yield* http.post(pathFor(call.upstreamModel, "batchEmbedContents"), embeddingsBody(call), jsonHeaders)
          const text = yield* http.text(response)
          return yield* Effect.try({
            try: () => embeddingsOf(JSON.parse(text), call.input),
            catch: protocolFailureOf
          })
        })
      )

    return { complete, stream, embed } satisfies ProviderAdapter
  })

export const plugin: ProviderPlugin = { id: "gemini", options: NoOptions, make }

export const GeminiPlugin = registerPlugin(plugin)
