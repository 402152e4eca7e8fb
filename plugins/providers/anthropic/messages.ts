/**
 * Our messages as Anthropic's conversation: `system` / `developer` messages
 * become the top-level `system`; the other turns alternate user/assistant as
 * Anthropic requires (consecutive turns of one role are merged, tool results
 * first); `tool` messages become user `tool_result` blocks. Tool call ids are
 * only sanitised to Anthropic's pattern, never looked up. Parts it cannot take
 * (audio, files other than inline PDFs) are `NotTranslatable`.
 */
import type { ContentPart, Message } from "../../../services/Chat.ts"
import { isRecord, type Json } from "../../support/json.ts"
import { notTranslatable } from "../../support/translate.ts"

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
      const source = url.startsWith("data:")
        ? base64Source(url) ?? notTranslatable("an image_url holds a data: URL that cannot be read")
        : { type: "url", url }
      return { type: "image", source }
    }
    case "file": {
      // Only inline PDFs have an Anthropic form (a document block).
      const file = isRecord(part.file) ? part.file : {}
      const source = typeof file.file_data === "string" ? base64Source(file.file_data) : undefined
      if (source?.media_type !== "application/pdf") return notTranslatable("file parts must be inline PDFs (file_data as a data: URL)")
      return { type: "document", source }
    }
    default:
      return notTranslatable(`${part.type} content parts are not supported`)
  }
}

/** Anthropic's tool ids match `^[a-zA-Z0-9_-]+$`; ids from other upstreams may not. */
const upstreamToolId = (id: string) => id.replace(/[^A-Za-z0-9_-]/g, "_") || "call"

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
export const conversationOf = (messages: ReadonlyArray<Message>) => {
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
