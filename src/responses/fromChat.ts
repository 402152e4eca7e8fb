/**
 * A chat completion as a Responses object: its text as a message item, its
 * tool calls as function-call items, its usage in Responses' names, the
 * privacy block kept. Ids come from the call's receipt id (`rcpt_X` is
 * `resp_X`, its items `msg_X`, `fc_X_0`…), so a response leads to its receipt.
 */
import type { ChatCompletion, Usage } from "../../services/Chat.ts"
import type { OutputItem, ResponseObject } from "../../services/Responses.ts"

/** The ids of a response served under a receipt: the response's and the unique part its items share. */
export const responseIds = (receiptId: string) => {
  const unique = receiptId.replace(/^rcpt_/, "")
  return { response: `resp_${unique}`, unique }
}

export const responsesUsage = (usage: Usage): NonNullable<ResponseObject["usage"]> => ({
  input_tokens: usage.prompt_tokens,
  input_tokens_details: { cached_tokens: usage.prompt_tokens_details?.cached_tokens ?? 0 },
  output_tokens: usage.completion_tokens,
  output_tokens_details: { reasoning_tokens: usage.completion_tokens_details?.reasoning_tokens ?? 0 },
  total_tokens: usage.total_tokens
})

/** `incomplete` with the reason when the output was cut at the token cap. */
export const statusOf = (finishReason: string | null | undefined) =>
  finishReason === "length"
    ? { status: "incomplete" as const, incomplete_details: { reason: "max_output_tokens" } }
    : finishReason === "content_filter"
    ? { status: "incomplete" as const, incomplete_details: { reason: "content_filter" } }
    : { status: "completed" as const, incomplete_details: null }

export const toResponse = (completion: ChatCompletion, receiptId: string): ResponseObject => {
  const ids = responseIds(receiptId)
  const choice = completion.choices[0]
  const { status, incomplete_details } = statusOf(choice?.finish_reason)
  const output: Array<OutputItem> = []
  const text = choice?.message.content
  if (text !== null && text !== undefined && (text !== "" || !choice?.message.tool_calls?.length)) {
    output.push({
      type: "message",
      id: `msg_${ids.unique}`,
      status,
      role: "assistant",
      content: [{ type: "output_text", text, annotations: [] }]
    })
  }
  for (const [index, call] of (choice?.message.tool_calls ?? []).entries()) {
    output.push({
      type: "function_call",
      id: `fc_${ids.unique}_${index}`,
      call_id: call.id,
      name: call.function.name,
      arguments: call.function.arguments,
      status: "completed"
    })
  }
  return {
    id: ids.response,
    object: "response",
    created_at: completion.created,
    status,
    incomplete_details,
    error: null,
    model: completion.model,
    output,
    usage: responsesUsage(completion.usage),
    store: false,
    ...(completion.privacy !== undefined ? { privacy: completion.privacy } : {})
  }
}
