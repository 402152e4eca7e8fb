/**
 * Plugin for Anthropic's Messages API (`POST {baseUrl}/messages`, default
 * `https://api.anthropic.com/v1`, `anthropic-version: 2023-06-01`). Requests
 * arrive in our OpenAI-style shape and are rewritten into Anthropic's;
 * answers are rebuilt from known fields only, so nothing upstream-specific
 * (thinking blocks, signatures, `toolu_` ids) reaches our callers.
 *
 * What the translation decides:
 * - `system` / `developer` messages become the top-level `system`; the other
 *   turns alternate user/assistant as Anthropic requires (consecutive turns of
 *   one role are merged, tool results first); `tool` messages become user
 *   `tool_result` blocks.
 * - Structured output: this API version has no native JSON mode, so
 *   `response_format` (json_schema / json_object) is served the usual way: one
 *   extra tool whose `input_schema` is the schema, which the model must call,
 *   forced alone when the caller offers no tools the model may use, else
 *   `any` tool so it can still call theirs. That tool's input is returned as
 *   the message content (JSON text, finish "stop"). With `tool_choice`
 *   required or named the answer is a tool call anyway, so no tool is added.
 * - Tool call ids reach callers as `call_…`; Anthropic accepts any id of its
 *   pattern, so ids coming back are only sanitised, never looked up.
 * - Parameters Anthropic lacks (seed, penalties, logit_bias, ...) are dropped
 *   because it rejects unknown fields; `top_k` is passed on, `user` becomes
 *   `metadata.user_id`, `parallel_tool_calls: false` becomes
 *   `disable_parallel_tool_use`, and temperature is capped at Anthropic's maximum of 1.
 * - Parts it cannot take (audio, files other than PDF data) fail the call as a
 *   400 before anything is sent.
 */
import { Effect } from "effect"
import type { ChatChunk, ChatRequest, ContentPart, FinishReason, Message, ToolCall, ToolCallDelta, Usage } from "../services/Chat.ts"
import { requestedMaxTokens } from "../services/Chat.ts"
import type { ProviderConfig } from "../services/Config.ts"
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
  intOr,
  isRecord,
  type Json,
  Malformed,
  nowSeconds,
  protocolFailureOf,
  recordOf,
  stringOr
} from "./support/json.ts"
import { type SseEvent, sseStream, type Translation } from "./support/sse.ts"
import { apiKeyOf, baseUrlOf, makeUpstreamHttp, requestHeaders } from "./support/upstreamHttp.ts"

const DEFAULT_BASE_URL = "https://api.anthropic.com/v1"
const API_VERSION = "2023-06-01"
/** Anthropic requires `max_tokens`; the gateway's estimate assumes the same default. */
const DEFAULT_MAX_TOKENS = 4096
const ANSWER_TOOL = "json_answer"

/** Content the request holds that Anthropic cannot take; the call fails as a 400. */
class Unsupported extends Error {}

const unsupported = (reason: string): never => {
  throw new Unsupported(reason)
}

// ---- request: messages -----------------------------------------------------

type Block = Json
interface Turn {
  readonly role: "user" | "assistant"
  content: Array<Block>
}

type TextContent = string | ReadonlyArray<{ readonly type: "text"; readonly text: string }> | null | undefined

/** Anthropic rejects empty text blocks, so they are left out. */
const textBlocks = (content: TextContent): Array<Block> =>
  (typeof content === "string" ? [content] : (content ?? []).map((part) => part.text))
    .filter((text) => text !== "")
    .map((text) => ({ type: "text", text }))

/** `data:<type>[;base64],<data>` as Anthropic's base64 source. */
const base64Source = (url: string): Block | undefined => {
  const match = /^data:([^;,]+)((?:;[^;,]*)*),(.*)$/s.exec(url)
  if (!match) return undefined
  const [, mediaType, params, data] = match
  if (params!.split(";").includes("base64")) return { type: "base64", media_type: mediaType, data }
  try {
    return { type: "base64", media_type: mediaType, data: Buffer.from(decodeURIComponent(data!)).toString("base64") }
  } catch {
    return undefined
  }
}

const partBlock = (part: ContentPart): Block | undefined => {
  switch (part.type) {
    case "text":
      return part.text === "" ? undefined : { type: "text", text: part.text }
    case "image_url": {
      const { url } = part.image_url
      return { type: "image", source: url.startsWith("data:") ? base64Source(url) ?? unsupported("bad data URL") : { type: "url", url } }
    }
    case "file": {
      // Only inline PDFs have an Anthropic form (a document block).
      const file = isRecord(part.file) ? part.file : {}
      const source = typeof file.file_data === "string" ? base64Source(file.file_data) : undefined
      if (source?.media_type !== "application/pdf") return unsupported("only inline PDF files are supported")
      return { type: "document", source }
    }
    default:
      return unsupported(`${part.type} parts are not supported`)
  }
}

/** Anthropic's tool ids match `^[a-zA-Z0-9_-]+$`; ids from other upstreams may not. */
const upstreamToolId = (id: string) => id.replace(/[^A-Za-z0-9_-]/g, "_") || "call"

/** What callers see: the `toolu_` prefix would name the upstream. */
const callerToolId = (id: string) => (id.startsWith("toolu_") ? `call_${id.slice("toolu_".length)}` : id)

/** Tool arguments as the object Anthropic needs; arguments that are no JSON object become `{}`. */
const toolInput = (args: string): Json => {
  try {
    const parsed: unknown = JSON.parse(args)
    return isRecord(parsed) ? parsed : {}
  } catch {
    return {}
  }
}

/** The turn a message becomes; system prompts are collected apart. */
const turnOf = (message: Message): Turn | undefined => {
  switch (message.role) {
    case "system":
    case "developer":
      return undefined
    case "user":
      return {
        role: "user",
        content: typeof message.content === "string"
          ? textBlocks(message.content)
          : message.content.flatMap((part): Array<Block> => {
            const block = partBlock(part)
            return block ? [block] : []
          })
      }
    case "assistant":
      return {
        role: "assistant",
        content: [
          ...textBlocks(message.content),
          ...(message.tool_calls ?? []).map((call) => ({
            type: "tool_use",
            id: upstreamToolId(call.id),
            name: call.function.name,
            input: toolInput(call.function.arguments)
          }))
        ]
      }
    case "tool": {
      const content = typeof message.content === "string" ? message.content : textBlocks(message.content)
      return {
        role: "user",
        content: [{
          type: "tool_result",
          tool_use_id: upstreamToolId(message.tool_call_id),
          // An empty result is sent without content: empty text is refused.
          ...(content.length > 0 ? { content } : {})
        }]
      }
    }
  }
}

const isToolResult = (block: Block) => block.type === "tool_result"

/** The conversation as alternating turns, plus the system prompt. */
const conversationOf = (messages: ReadonlyArray<Message>) => {
  const system: Array<Block> = []
  const turns: Array<Turn> = []
  for (const message of messages) {
    if (message.role === "system" || message.role === "developer") {
      system.push(...textBlocks(message.content))
      continue
    }
    const turn = turnOf(message)
    if (turn === undefined || turn.content.length === 0) continue
    const last = turns.at(-1)
    if (last?.role === turn.role) last.content.push(...turn.content)
    else turns.push(turn)
  }
  return {
    // A lone text block is sent as a plain string, as people write it.
    system: system.length === 1 ? system[0]!.text : system.length > 1 ? system : undefined,
    messages: turns.map(({ role, content }) => {
      // Tool results must open the turn that answers the tool calls.
      const ordered = role === "user" ? [...content.filter(isToolResult), ...content.filter((b) => !isToolResult(b))] : content
      return { role, content: ordered.length === 1 && ordered[0]!.type === "text" ? ordered[0]!.text : ordered }
    })
  }
}

// ---- request: tools and structured output ----------------------------------

interface ToolPlan {
  readonly tools?: Array<Block>
  readonly tool_choice?: Block
  /** The name of the tool standing in for structured output, when there is one. */
  readonly answerTool?: string
}

const choiceOf = (choice: ChatRequest["tool_choice"]): Block | undefined => {
  switch (choice) {
    case undefined:
      return undefined
    case "auto":
      return { type: "auto" }
    case "none":
      return { type: "none" }
    case "required":
      return { type: "any" }
    default:
      return { type: "tool", name: choice.function.name }
  }
}

/** The schema as a tool's input schema, which Anthropic requires to be an object schema. */
const answerSchemaOf = (format: NonNullable<ChatRequest["response_format"]>): Json => {
  const schema = format.type === "json_schema" ? format.json_schema.schema : undefined
  return schema === undefined ? { type: "object" } : { type: "object", ...schema }
}

const toolPlanOf = (request: ChatRequest): ToolPlan => {
  const tools: Array<Block> = (request.tools ?? []).map(({ function: fn }) => ({
    name: fn.name,
    ...(fn.description !== undefined ? { description: fn.description } : {}),
    input_schema: { type: "object", ...(fn.parameters ?? { properties: {} }) }
  }))
  const choice = request.tool_choice
  const single = request.parallel_tool_calls === false ? { disable_parallel_tool_use: true } : {}
  const format = request.response_format
  const forcesCallerTool = tools.length > 0 && (choice === "required" || typeof choice === "object")
  if (format !== undefined && format.type !== "text" && !forcesCallerTool) {
    let name = ANSWER_TOOL
    while (tools.some((tool) => tool.name === name)) name = `_${name}`
    const description = (format.type === "json_schema" ? format.json_schema.description : undefined) ??
      "Give your final answer by calling this tool: its input is the answer, as JSON."
    const callerToolsUsable = tools.length > 0 && choice !== "none"
    return {
      tools: [...tools, { name, description, input_schema: answerSchemaOf(format) }],
      tool_choice: callerToolsUsable
        ? { type: "any", ...single }
        : { type: "tool", name, disable_parallel_tool_use: true },
      answerTool: name
    }
  }
  if (tools.length === 0) return {}
  const mapped = choiceOf(choice) ?? (request.parallel_tool_calls === false ? { type: "auto" } : undefined)
  return { tools, ...(mapped ? { tool_choice: mapped.type === "none" ? mapped : { ...mapped, ...single } } : {}) }
}

// ---- request: body -----------------------------------------------------------

interface Plan {
  readonly body: Json
  readonly answerTool: string | undefined
}

const planOf = (call: UpstreamCall, streaming: boolean): Plan => {
  const { request } = call
  const { system, messages } = conversationOf(request.messages)
  const { answerTool, ...tools } = toolPlanOf(request)
  const stop = typeof request.stop === "string" ? [request.stop] : request.stop
  return {
    answerTool,
    body: {
      model: call.upstreamModel,
      max_tokens: requestedMaxTokens(request) ?? DEFAULT_MAX_TOKENS,
      ...(system !== undefined ? { system } : {}),
      messages,
      // OpenAI's range is 0–2, Anthropic's 0–1.
      ...(request.temperature != null ? { temperature: Math.min(request.temperature, 1) } : {}),
      ...(request.top_p != null ? { top_p: request.top_p } : {}),
      ...(typeof request.top_k === "number" ? { top_k: request.top_k } : {}),
      ...(stop != null && stop.length > 0 ? { stop_sequences: stop } : {}),
      ...(request.user !== undefined ? { metadata: { user_id: request.user } } : {}),
      ...tools,
      ...(streaming ? { stream: true } : {})
    }
  }
}

const planEffect = (call: UpstreamCall, streaming: boolean) =>
  Effect.try({
    try: () => planOf(call, streaming),
    catch: (error) =>
      error instanceof Unsupported
        ? new UpstreamFailure({ kind: "status", status: 400, detail: `anthropic: not sent: ${error.message}` })
        : new UpstreamFailure({ kind: "protocol", detail: `anthropic: could not translate the request: ${String(error)}` })
  })

// ---- response -----------------------------------------------------------------

const finishReasonOf = (stopReason: unknown, madeToolCalls: boolean): FinishReason => {
  switch (stopReason) {
    case "max_tokens":
    case "model_context_window_exceeded":
      return "length"
    case "refusal":
      return "content_filter"
    default:
      // `tool_use` for only the structured-output tool is an answer, not a call for the caller to run.
      return madeToolCalls ? "tool_calls" : "stop"
  }
}

/** Cache reads and writes are input too: the caller pays for the whole prompt. */
const promptTokensOf = (usage: Json): number | undefined =>
  Number.isInteger(usage.input_tokens)
    ? (usage.input_tokens as number) + intOr(usage.cache_creation_input_tokens, 0) + intOr(usage.cache_read_input_tokens, 0)
    : undefined

const usageOf = (u: unknown): Usage | undefined => {
  if (!isRecord(u)) return undefined
  const prompt_tokens = promptTokensOf(u)
  if (prompt_tokens === undefined || !Number.isInteger(u.output_tokens)) return undefined
  const completion_tokens = u.output_tokens as number
  return { prompt_tokens, completion_tokens, total_tokens: prompt_tokens + completion_tokens }
}

const errorMessageOf = (json: Json) => errorKindOf(json.error)

const completionOf = (u: unknown, upstreamModel: string, answerTool: string | undefined): UpstreamCompletion => {
  const json = recordOf(u, "message")
  if (json.type === "error") throw new Malformed(`upstream reported an error: ${errorMessageOf(json)}`)
  let text: string | undefined
  const toolCalls: Array<ToolCall> = []
  for (const b of arrayOf(json.content, "content")) {
    const block = recordOf(b, "content block")
    if (block.type === "text") {
      text = (text ?? "") + stringOr(block.text, "")
    } else if (block.type === "tool_use") {
      const name = stringOr(block.name, "")
      const input = JSON.stringify(block.input ?? {})
      if (name === answerTool) text = (text ?? "") + input
      else {
        toolCalls.push({
          id: callerToolId(stringOr(block.id, `call_${toolCalls.length}`)),
          type: "function",
          function: { name, arguments: input }
        })
      }
    }
    // Thinking and server-tool blocks are the upstream's own business.
  }
  const usage = usageOf(json.usage)
  return {
    id: stringOr(json.id, "msg"),
    object: "chat.completion",
    created: nowSeconds(),
    model: upstreamModel,
    choices: [{
      index: 0,
      message: {
        role: "assistant",
        content: text ?? (toolCalls.length > 0 ? null : ""),
        ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {})
      },
      finish_reason: finishReasonOf(json.stop_reason, toolCalls.length > 0)
    }],
    ...(usage ? { usage } : {})
  }
}

// ---- SSE ----------------------------------------------------------------------

/** What a content block index of the stream turned out to be. */
type StreamBlock =
  | { readonly kind: "text" }
  | { readonly kind: "tool"; readonly position: number; readonly input: unknown; emitted: boolean }
  | { readonly kind: "answer"; readonly input: unknown; emitted: boolean }
  | { readonly kind: "other" }

const none: Translation<ChatChunk> = { out: [], done: false }

/** Chat chunks from Anthropic's SSE events (a fresh translator per stream: it keeps state). */
const translator = (upstreamModel: string, answerTool: string | undefined) => {
  const created = nowSeconds()
  let id = "msg"
  let started = false
  const blocks = new Map<number, StreamBlock>()
  let toolCount = 0
  let stopReason: unknown = undefined
  // Message usage arrives in parts (input at the start, output at the end); later values win.
  const usage: Json = {}

  const chunk = (delta: ChatChunk["choices"][number]["delta"], finish: FinishReason | null = null): ChatChunk => {
    // The first chunk carries the role, whatever event produced it.
    const withRole = started ? delta : { role: "assistant" as const, ...delta }
    started = true
    return { id, object: "chat.completion.chunk", created, model: upstreamModel, choices: [{ index: 0, delta: withRole, finish_reason: finish }] }
  }
  const content = (text: string) => ({ out: [chunk({ content: text })], done: false })
  const toolDelta = (delta: ToolCallDelta) => ({ out: [chunk({ tool_calls: [delta] })], done: false })
  const noteUsage = (u: unknown) => {
    if (isRecord(u)) for (const [key, value] of Object.entries(u)) if (Number.isInteger(value)) usage[key] = value
  }
  /** Arguments of a block: its streamed JSON, or the start's input when nothing was streamed. */
  const argumentsDelta = (block: Extract<StreamBlock, { emitted: boolean }>, partial: string | undefined) => {
    const text = partial ?? (block.emitted ? "" : JSON.stringify(block.input ?? {}))
    if (text === "") return none
    block.emitted = true
    return block.kind === "answer" ? content(text) : toolDelta({ index: block.position, function: { arguments: text } })
  }

  return (event: SseEvent): Translation<ChatChunk> => {
    if (event.data === "") return none
    const json = recordOf(JSON.parse(event.data), "event")
    switch (stringOr(json.type, event.event)) {
      case "message_start": {
        const message = recordOf(json.message, "message")
        id = stringOr(message.id, id)
        noteUsage(message.usage)
        return content("")
      }
      case "content_block_start": {
        const index = intOr(json.index, blocks.size)
        const block = recordOf(json.content_block, "content block")
        if (block.type === "text") {
          blocks.set(index, { kind: "text" })
          return stringOr(block.text, "") === "" ? none : content(block.text as string)
        }
        if (block.type !== "tool_use") {
          blocks.set(index, { kind: "other" })
          return none
        }
        const name = stringOr(block.name, "")
        if (name === answerTool) {
          blocks.set(index, { kind: "answer", input: block.input, emitted: false })
          return none
        }
        const position = toolCount++
        blocks.set(index, { kind: "tool", position, input: block.input, emitted: false })
        return toolDelta({
          index: position,
          id: callerToolId(stringOr(block.id, `call_${position}`)),
          type: "function",
          function: { name, arguments: "" }
        })
      }
      case "content_block_delta": {
        const delta = recordOf(json.delta, "delta")
        const block = blocks.get(intOr(json.index, -1))
        if (delta.type === "text_delta") return stringOr(delta.text, "") === "" ? none : content(delta.text as string)
        if (delta.type !== "input_json_delta" || block?.kind === "other") return none
        if (block === undefined || block.kind === "text") throw new Malformed("input_json_delta outside a tool_use block")
        return argumentsDelta(block, stringOr(delta.partial_json, ""))
      }
      case "content_block_stop": {
        const block = blocks.get(intOr(json.index, -1))
        return block?.kind === "tool" || block?.kind === "answer" ? argumentsDelta(block, undefined) : none
      }
      case "message_delta": {
        if (isRecord(json.delta) && json.delta.stop_reason != null) stopReason = json.delta.stop_reason
        noteUsage(json.usage)
        return none
      }
      case "message_stop": {
        const out = [chunk({}, finishReasonOf(stopReason, toolCount > 0))]
        const total = usageOf(usage)
        if (total) out.push({ id, object: "chat.completion.chunk", created, model: upstreamModel, choices: [], usage: total })
        return { out, done: true }
      }
      case "error":
        throw new Malformed(`upstream error event: ${errorMessageOf(json)}`)
      default:
        // `ping`, and event types Anthropic may add later.
        return none
    }
  }
}

// ---- adapter ------------------------------------------------------------------

const make = (provider: ProviderConfig, env: Readonly<Record<string, string | undefined>>) =>
  Effect.gen(function*() {
    const { basePath, origin } = yield* baseUrlOf(provider, "anthropic", DEFAULT_BASE_URL)
    const apiKey = yield* apiKeyOf(provider, env)
    const http = yield* makeUpstreamHttp(origin, provider.timeoutMs)
    const { json: jsonHeaders, sse: sseHeaders } = requestHeaders({
      "anthropic-version": API_VERSION,
      ...(apiKey ? { "x-api-key": apiKey } : {})
    })
    const messagesPath = `${basePath}/messages`

    const complete: ProviderAdapter["complete"] = (call) =>
      Effect.scoped(
        Effect.gen(function*() {
          const plan = yield* planEffect(call, false)
          const response = yield* http.post(messagesPath, plan.body, jsonHeaders)
          const text = yield* http.text(response)
          return yield* Effect.try({
            try: () => completionOf(JSON.parse(text), call.upstreamModel, plan.answerTool),
            catch: protocolFailureOf
          })
        })
      )

    const stream: ProviderAdapter["stream"] = (call) =>
      Effect.flatMap(planEffect(call, true), (plan) =>
        http.post(messagesPath, plan.body, sseHeaders).pipe(
          Effect.map((response) =>
            sseStream(response.body, translator(call.upstreamModel, plan.answerTool), { endMarker: true })
          )
        ))

    return { complete, stream } satisfies ProviderAdapter
  })

export const plugin: ProviderPlugin = { id: "anthropic", options: NoOptions, make }

export const AnthropicPlugin = registerPlugin(plugin)
