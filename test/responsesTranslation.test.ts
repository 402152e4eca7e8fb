/** The Responses translators on their own: input items to chat messages, and chat chunks to Responses events (including a failure). */
import { Effect, Either } from "effect"
import { describe, expect, it } from "vitest"
import { InvalidRequest, UpstreamError } from "../services/ApiError.ts"
import type { ChatChunk } from "../services/Chat.ts"
import type { ResponsesRequest } from "../services/Responses.ts"
import { eventTranslator } from "../src/responses/events.ts"
import { toChatRequest } from "../src/responses/toChat.ts"

const chat = (request: Partial<ResponsesRequest>) =>
  Effect.runSync(Effect.either(toChatRequest({ model: "auto", input: "x", ...request } as ResponsesRequest)))

const chunk = (delta: ChatChunk["choices"][number]["delta"], finish: ChatChunk["choices"][number]["finish_reason"] = null): ChatChunk => ({
  id: "chatcmpl-1",
  object: "chat.completion.chunk",
  created: 1700000000,
  model: "svc/pro",
  choices: [{ index: 0, delta, finish_reason: finish }]
})

describe("Responses request → chat request", () => {
  it("puts instructions first, joins parallel function calls into one assistant turn, and maps the options", () => {
    const request = chat({
      instructions: "Be brief.",
      input: [
        { role: "user", content: [{ type: "input_text", text: "a" }, { type: "input_image", image_url: "data:image/png;base64,AA" }] },
        { type: "function_call", call_id: "c1", name: "f", arguments: "{}" },
        { type: "function_call", call_id: "c2", name: "g", arguments: "{}" },
        { type: "function_call_output", call_id: "c1", output: "one" },
        { type: "function_call_output", call_id: "c2", output: [{ type: "input_text", text: "two" }] }
      ],
      tools: [{ type: "function", name: "f", parameters: { type: "object" }, strict: true }],
      tool_choice: { type: "function", name: "f" },
      text: { format: { type: "json_schema", name: "out", schema: { type: "object" }, strict: true } },
      max_output_tokens: 9,
      reasoning: { effort: "low" },
      stream: true
    })
    expect(Either.isRight(chat({}))).toBe(true)
    const value = Either.getOrThrow(request)
    expect(value.messages.map((message) => message.role)).toEqual(["system", "user", "assistant", "tool", "tool"])
    expect(value.messages[2]).toMatchObject({ content: null, tool_calls: [{ id: "c1" }, { id: "c2" }] })
    expect(value.messages[4]).toMatchObject({ tool_call_id: "c2", content: "two" })
    expect(value).toMatchObject({
      tools: [{ type: "function", function: { name: "f", strict: true } }],
      tool_choice: { type: "function", function: { name: "f" } },
      response_format: { type: "json_schema", json_schema: { name: "out", strict: true } },
      max_completion_tokens: 9,
      reasoning_effort: "low",
      stream_options: { include_usage: true }
    })
  })

  it("refuses what it cannot serve, naming the field", () => {
    const param = (request: Partial<ResponsesRequest>) => {
      const result = chat(request)
      return Either.isLeft(result) && result.left instanceof InvalidRequest ? result.left.param : "accepted"
    }
    expect(param({ input: [] })).toBe("input")
    expect(param({ input: [{ type: "computer_call_output" }] as any })).toBe("input[0].type")
    expect(param({ input: [{ type: "function_call", call_id: "c" }] as any })).toBe("input[0]")
    expect(param({ input: [{ role: "assistant", content: [{ type: "input_image", image_url: "x" }] }] })).toBe("input[0].content")
    expect(param({ conversation: "conv_1" })).toBe("conversation")
  })
})

describe("chat chunks → Responses events", () => {
  it("numbers every event, closes the text item before a function call, and ends with the whole response", () => {
    const translator = eventTranslator({ response: "resp_1", unique: "1" })
    const events = [
      ...translator.chunk(chunk({ role: "assistant", content: "" })),
      ...translator.chunk(chunk({ content: "Let me check." })),
      ...translator.chunk(chunk({ tool_calls: [{ index: 0, id: "call_a", type: "function", function: { name: "f", arguments: "" } }] })),
      ...translator.chunk(chunk({ tool_calls: [{ index: 0, function: { arguments: "{\"a\":" } }] })),
      ...translator.chunk(chunk({ tool_calls: [{ index: 0, function: { arguments: "1}" } }] }, "tool_calls")),
      ...translator.end()
    ]
    expect(events.map((event) => event.sequence_number)).toEqual(events.map((_, i) => i))
    expect(events.map((event) => event.type)).toEqual([
      "response.created", "response.in_progress",
      "response.output_item.added", "response.content_part.added", "response.output_text.delta",
      "response.output_text.done", "response.content_part.done", "response.output_item.done",
      "response.output_item.added", "response.function_call_arguments.delta", "response.function_call_arguments.delta",
      "response.function_call_arguments.done", "response.output_item.done",
      "response.completed"
    ])
    const completed = events.at(-1)!.response as any
    expect(completed.output).toEqual([
      { type: "message", id: "msg_1", status: "completed", role: "assistant", content: [{ type: "output_text", text: "Let me check.", annotations: [] }] },
      { type: "function_call", id: "fc_1_0", call_id: "call_a", name: "f", arguments: "{\"a\":1}", status: "completed" }
    ])
    expect(events[8]).toMatchObject({ output_index: 1 })
  })

  it("ends a failed stream with response.failed carrying the error's code, after what was delivered", () => {
    const translator = eventTranslator({ response: "resp_2", unique: "2" })
    const events = [
      ...translator.chunk(chunk({ content: "Partial" })),
      ...translator.fail(new UpstreamError({ message: "every route failed" }))
    ]
    const failed = events.at(-1)!
    expect(failed.type).toBe("response.failed")
    expect(failed.response).toMatchObject({ id: "resp_2", status: "failed", error: { code: "upstream_error", message: "every route failed" } })
  })
})
