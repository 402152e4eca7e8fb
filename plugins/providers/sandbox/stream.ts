/**
 * The sandbox's answer streamed as OpenAI streams it: role, a reasoning
 * model's thinking, then content in pieces of a few words (or tool-call arguments in pieces of whole code points),
 * finish reason, then usage alone.
 */
import type { ChatChunk, ChatCompletion } from "../../../services/Chat.ts"

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
export const chunksOf = (completion: ChatCompletion): Array<ChatChunk> => {
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
  const thinking = wordPieces(choice?.message.reasoning_content ?? "").map((piece) => frame({ reasoning_content: piece }))
  return [
    frame({ role: "assistant", content: "" }),
    ...thinking,
    ...body,
    frame({}, choice?.finish_reason ?? "stop"),
    { ...base, choices: [], usage }
  ]
}
