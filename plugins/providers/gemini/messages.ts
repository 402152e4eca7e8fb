/**
 * Our messages as Gemini's `contents`: system text apart (for
 * `systemInstruction`), consecutive same-role turns merged (Gemini wants them
 * alternating), images, audio and inline files as `inlineData` / `fileData`,
 * tool calls and results as `functionCall` / `functionResponse` (answered by
 * function name). What Gemini cannot express is `NotTranslatable`.
 */
import type { ContentPart, Message, ToolCall } from "../../../services/Chat.ts"
import { isRecord, type Json, stringOr } from "../../support/json.ts"
import { notTranslatable } from "../../support/translate.ts"

/**
 * Gemini 3 refuses replayed function calls without the thought signature it
 * attached to them; OpenAI-shaped history cannot carry one (and exposing it
 * would name the upstream), so replayed calls get the placeholder Google
 * documents for histories that have none.
 */
const REPLAYED_CALL_SIGNATURE = "skip_thought_signature_validator"

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

const percentDecoded = (payload: string): string => {
  try {
    return decodeURIComponent(payload)
  } catch {
    return notTranslatable("a data: URL in a content part has bad percent-encoding")
  }
}

/** `data:[<type>][;base64],<payload>` as Gemini's `inlineData` (which wants base64). */
const inlineDataOf = (url: string, fallbackType: string): Json => {
  const comma = url.indexOf(",")
  if (comma < 0) return notTranslatable("a data: URL in a content part has no comma")
  const [mimeType, ...params] = url.slice("data:".length, comma).split(";")
  const payload = url.slice(comma + 1)
  const data = params.includes("base64") ? payload : Buffer.from(percentDecoded(payload), "utf8").toString("base64")
  return { inlineData: { mimeType: mimeType || fallbackType, data } }
}

const imagePartOf = (url: string): Json => {
  if (url.startsWith("data:")) return inlineDataOf(url, "image/jpeg")
  if (!/^https?:\/\//i.test(url)) return notTranslatable("image_url.url must be a data: or http(s) URL")
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
      if (typeof audio.data !== "string") return notTranslatable("an input_audio part has no data")
      return { inlineData: { mimeType: `audio/${stringOr(audio.format, "wav")}`, data: audio.data } }
    }
    case "file": {
      // Only inline files travel: an OpenAI file id means nothing to Gemini.
      const file = isRecord(part.file) ? part.file : {}
      if (typeof file.file_data !== "string" || !file.file_data.startsWith("data:")) {
        return notTranslatable("file parts must carry file_data as a data: URL")
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
    : notTranslatable(`function.arguments of tool call ${call.id} is not a JSON object`)
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
export const contentsOf = (messages: ReadonlyArray<Message>) => {
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
          notTranslatable(`a tool message answers unknown tool_call_id ${message.tool_call_id}`)
        add("user", [{ functionResponse: { name, response: functionResultOf(textOf(message.content)) } }])
        break
      }
    }
  }
  return { system, contents }
}
