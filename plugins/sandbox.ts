/**
 * The built-in offline provider. It answers from the conversation itself,
 * deterministically, so a fresh install without upstream keys has a working
 * model: text replies, tool calls whose arguments fit the tool's schema,
 * structured output, token limits and streaming all behave like an upstream's.
 */
import { createHash } from "node:crypto"
import { Clock, Effect, Stream } from "effect"
import {
  type ChatChunk,
  type ChatCompletion,
  type ChatRequest,
  type FunctionTool,
  type Message,
  requestedMaxTokens,
  type ToolCall
} from "../services/Chat.ts"
import type { EmbedCall, EmbedResult } from "../services/Embeddings.ts"
import {
  type ProviderAdapter,
  type ProviderPlugin,
  registerPlugin,
  type UpstreamCall,
  UpstreamFailure
} from "../services/Providers.ts"
import { NoOptions } from "../services/Registry.ts"
import { jsonSchemaSample } from "./support/jsonSchemaSample.ts"

/** The sandbox model's tokenizer: runs of letters/digits, and every other non-space character alone. */
export const tokenize = (text: string): ReadonlyArray<RegExpExecArray> => [...text.matchAll(TOKEN)]
const TOKEN = /[\p{L}\p{N}_]+|[^\p{L}\p{N}_\s]/gu

export const countTokens = (text: string): number => tokenize(text).length

/** At most `max` tokens of `text`, keeping its spacing. */
const limitTokens = (text: string, max: number | undefined): { readonly text: string; readonly cut: boolean } => {
  const tokens = tokenize(text)
  if (max === undefined || tokens.length <= max) return { text, cut: false }
  const last = tokens[max - 1]
  return { text: last ? text.slice(0, last.index + last[0].length) : "", cut: true }
}

const hash = (value: unknown): string => createHash("sha256").update(JSON.stringify(value)).digest("hex").slice(0, 24)

const textOf = (content: string | ReadonlyArray<{ readonly type: string }> | null | undefined): string =>
  typeof content === "string"
    ? content
    : (content ?? []).flatMap((part) => (isTextPart(part) ? [part.text] : [])).join("\n")

const isTextPart = (part: { readonly type: string }): part is { readonly type: "text"; readonly text: string } =>
  part.type === "text" && "text" in part && typeof part.text === "string"

const messageText = (message: Message): string =>
  message.role === "assistant"
    ? [textOf(message.content), ...(message.tool_calls ?? []).flatMap((c) => [c.function.name, c.function.arguments])]
      .join("\n")
    : textOf(message.content)

const promptTokens = (request: ChatRequest): number =>
  request.messages.reduce((sum, message) => sum + countTokens(messageText(message)), 0) +
  (request.tools ?? []).reduce((sum, tool) => sum + countTokens(JSON.stringify(tool.function)), 0)

const clip = (text: string, max = 120): string => {
  const flat = text.replace(/\s+/g, " ").trim()
  return flat.length <= max ? flat : `${flat.slice(0, max - 3)}...`
}

const replyText = ({ request, upstreamModel }: UpstreamCall): string => {
  const last = request.messages[request.messages.length - 1]
  if (last?.role === "tool") {
    const call = request.messages
      .flatMap((m) => (m.role === "assistant" ? m.tool_calls ?? [] : []))
      .find((c) => c.id === last.tool_call_id)
    const tool = call ? `the ${call.function.name} tool` : "the tool"
    return `Sandbox reply from ${upstreamModel}: ${tool} returned "${clip(textOf(last.content))}"`
  }
  const user = [...request.messages].reverse().find((m) => m.role === "user")
  const parts = typeof user?.content === "string" ? [] : user?.content ?? []
  const images = parts.filter((part) => part.type === "image_url").length
  const reply = `Sandbox reply from ${upstreamModel} to: "${clip(textOf(user?.content))}"`
  return images === 0 ? reply : `${reply} I received ${images} image${images === 1 ? "" : "s"}.`
}

/** The reply in the shape `response_format` asks for. */
const formatted = (request: ChatRequest, reply: string): string => {
  const format = request.response_format
  if (format?.type === "json_schema" && format.json_schema.schema) {
    return JSON.stringify(jsonSchemaSample(format.json_schema.schema))
  }
  if (format?.type === "json_schema" || format?.type === "json_object") return JSON.stringify({ reply })
  return reply
}

/** Which tool to call, if any. "auto" stops calling once a tool result came back, so agent loops end. */
const chooseTool = (request: ChatRequest): Effect.Effect<FunctionTool | undefined, UpstreamFailure> => {
  const tools = request.tools ?? []
  const choice = request.tool_choice ?? "auto"
  if (tools.length === 0 || choice === "none") return Effect.succeed(undefined)
  if (typeof choice === "object") {
    const named = tools.find((tool) => tool.function.name === choice.function.name)
    return named
      ? Effect.succeed(named)
      : Effect.fail(new UpstreamFailure({
        kind: "status",
        status: 400,
        detail: `sandbox: tool_choice names "${choice.function.name}", which is not among the tools`
      }))
  }
  const lastRole = request.messages[request.messages.length - 1]?.role
  return Effect.succeed(choice === "auto" && lastRole === "tool" ? undefined : tools[0])
}

const EMPTY_PARAMETERS = { type: "object", properties: {} }

const complete = (call: UpstreamCall): Effect.Effect<ChatCompletion, UpstreamFailure> =>
  Effect.gen(function*() {
    const { request } = call
    // The stream flags do not change the answer, so they stay out of the ids.
    const { messages, tools, tool_choice, response_format } = request
    const key = hash([call.upstreamModel, messages, tools, tool_choice, response_format])
    const tool = yield* chooseTool(request)
    const max = requestedMaxTokens(request)
    const output = tool
      ? limitTokens(JSON.stringify(jsonSchemaSample(tool.function.parameters ?? EMPTY_PARAMETERS)), max)
      : limitTokens(formatted(request, replyText(call)), max)
    const toolCall: ToolCall | undefined = tool && {
      id: `call_${hash([key, tool.function.name])}`,
      type: "function",
      function: { name: tool.function.name, arguments: output.text }
    }
    const prompt = promptTokens(request)
    const completion = countTokens(output.text)
    return {
      id: `chatcmpl-${key}`,
      object: "chat.completion",
      created: Math.floor((yield* Clock.currentTimeMillis) / 1000),
      model: call.upstreamModel,
      choices: [{
        index: 0,
        message: toolCall
          ? { role: "assistant", content: null, tool_calls: [toolCall] }
          : { role: "assistant", content: output.text },
        finish_reason: output.cut ? "length" : toolCall ? "tool_calls" : "stop"
      }],
      usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion }
    } satisfies ChatCompletion
  })

/** A few words per piece; the pieces join back to `text`. */
const wordPieces = (text: string, wordsPerPiece = 3): Array<string> => {
  const words = text.match(/\s*\S+\s*/g) ?? []
  if (words.join("") !== text) return text === "" ? [] : [text]
  return groups(words, wordsPerPiece)
}

/** Whole code points per piece, so no piece splits a surrogate pair. */
const charPieces = (text: string, size = 16): Array<string> => groups([...text], size)

const groups = (items: ReadonlyArray<string>, size: number): Array<string> =>
  Array.from({ length: Math.ceil(items.length / size) }, (_, i) => items.slice(i * size, (i + 1) * size).join(""))

type ChunkChoice = ChatChunk["choices"][number]

/** The completion as OpenAI streams it: role, content or tool-call pieces, finish reason, then usage alone. */
const chunksOf = (completion: ChatCompletion): Array<ChatChunk> => {
  const { choices: [choice], usage, ...head } = completion
  const base = { ...head, object: "chat.completion.chunk" } as const
  const frame = (delta: ChunkChoice["delta"], finish: ChunkChoice["finish_reason"] = null): ChatChunk => ({
    ...base,
    choices: [{ index: 0, delta, finish_reason: finish }]
  })
  const toolCall = choice?.message.tool_calls?.[0]
  const body = toolCall
    ? [
      frame({ tool_calls: [{ ...toolCall, index: 0, function: { ...toolCall.function, arguments: "" } }] }),
      ...charPieces(toolCall.function.arguments).map((piece) =>
        frame({ tool_calls: [{ index: 0, function: { arguments: piece } }] })
      )
    ]
    : wordPieces(choice?.message.content ?? "").map((piece) => frame({ content: piece }))
  return [
    frame({ role: "assistant", content: "" }),
    ...body,
    frame({}, choice?.finish_reason ?? "stop"),
    { ...base, choices: [], usage }
  ]
}

/** Vector length when the caller sets no `dimensions`. */
export const SANDBOX_EMBEDDING_DIMENSIONS = 256

/** FNV-1a, 32 bits: a seed per token. */
const fnv1a = (text: string): number => {
  let h = 0x811c9dc5
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193)
  return h >>> 0
}

/** mulberry32: `count` pseudo-random values in [-1, 1) from a seed. */
const noise = (seed: number, count: number): Array<number> => {
  let state = seed
  return Array.from({ length: count }, () => {
    state = (state + 0x6d2b79f5) | 0
    let t = Math.imul(state ^ (state >>> 15), 1 | state)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return (((t ^ (t >>> 14)) >>> 0) / 4294967296) * 2 - 1
  })
}

/**
 * A unit-length vector from hashes of the text's tokens (lower-cased), so texts
 * sharing words lie close together; a text without tokens gets one from its own hash.
 */
const embedText = (model: string, text: string, dimensions: number): Array<number> => {
  const sum = new Array<number>(dimensions).fill(0)
  const tokens = tokenize(text.toLowerCase()).map((match) => match[0])
  for (const token of tokens.length > 0 ? tokens : [`\u0000${text}`]) {
    noise(fnv1a(`${model}\u0000${token}`), dimensions).forEach((value, i) => (sum[i]! += value))
  }
  const norm = Math.sqrt(sum.reduce((total, value) => total + value * value, 0)) || 1
  return sum.map((value) => value / norm)
}

const embed = (call: EmbedCall): Effect.Effect<EmbedResult, UpstreamFailure> =>
  Effect.sync(() => ({
    embeddings: call.input.map((text) =>
      embedText(call.upstreamModel, text, call.dimensions ?? SANDBOX_EMBEDDING_DIMENSIONS)
    ),
    promptTokens: call.input.reduce((sum, text) => sum + countTokens(text), 0)
  }))

const adapter: ProviderAdapter = {
  complete,
  stream: (call) => Effect.map(complete(call), (completion) => Stream.fromIterable(chunksOf(completion))),
  embed
}

export const plugin: ProviderPlugin = {
  id: "sandbox",
  options: NoOptions,
  // It runs inside the gateway process and keeps nothing.
  privacyDefaults: { stores: false, logs: false, trains: false, operatorControlled: true },
  make: () => Effect.succeed(adapter)
}

export const SandboxPlugin = registerPlugin(plugin)
