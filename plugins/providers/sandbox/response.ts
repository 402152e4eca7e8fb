/**
 * The sandbox's answer: deterministic ids from a hash of what shapes the
 * answer, a text reply or a call of the chosen tool whose arguments fit its
 * schema, cut at the requested token limit, with exact usage (a reasoning
 * model's thinking first, reasoning.ts); `created` comes from Effect's `Clock`.
 */
import { createHash } from "node:crypto"
import { Clock, Effect } from "effect"
import { type ChatCompletion, requestedMaxTokens, type ToolCall } from "../../../services/Chat.ts"
import type { RequestNotTranslatable, UpstreamCall } from "../../../services/Providers.ts"
import { jsonSchemaSample } from "../../support/jsonSchemaSample.ts"
import { reasoningFor, reasons } from "./reasoning.ts"
import { chooseTool, formatted, promptTokens, replyText } from "./request.ts"
import { countTokens, limitTokens } from "./tokens.ts"

const hash = (value: unknown): string => createHash("sha256").update(JSON.stringify(value)).digest("hex").slice(0, 24)

const EMPTY_PARAMETERS = { type: "object", properties: {} }

export const complete = (call: UpstreamCall): Effect.Effect<ChatCompletion, RequestNotTranslatable> =>
  Effect.gen(function*() {
    const { request } = call
    // The stream flags do not change the answer, so they stay out of the ids.
    const { messages, tools, tool_choice, response_format } = request
    const key = hash([call.upstreamModel, messages, tools, tool_choice, response_format])
    const tool = yield* chooseTool(request)
    const max = requestedMaxTokens(request)
    const thinking = reasons(call.upstreamModel) ? reasoningFor(request, tool, max) : undefined
    const reasoningTokens = thinking === undefined ? 0 : countTokens(thinking.text)
    // Thinking and answer share the token limit; thinking that used it all leaves an empty answer.
    const left = max === undefined ? undefined : max - reasoningTokens
    const output = thinking?.cut
      ? { text: "", cut: true }
      : tool
      ? limitTokens(JSON.stringify(jsonSchemaSample(tool.function.parameters ?? EMPTY_PARAMETERS)), left)
      : limitTokens(formatted(request, replyText(call)), left)
    const toolCall: ToolCall | undefined = tool && !thinking?.cut
      ? { id: `call_${hash([key, tool.function.name])}`, type: "function", function: { name: tool.function.name, arguments: output.text } }
      : undefined
    const prompt = promptTokens(request)
    const completion = countTokens(output.text) + reasoningTokens
    return {
      id: `chatcmpl-${key}`,
      object: "chat.completion",
      created: Math.floor((yield* Clock.currentTimeMillis) / 1000),
      model: call.upstreamModel,
      choices: [{
        index: 0,
        message: {
          role: "assistant",
          ...(toolCall ? { content: null, tool_calls: [toolCall] } : { content: output.text }),
          ...(thinking === undefined ? {} : { reasoning_content: thinking.text })
        },
        finish_reason: output.cut ? "length" : toolCall ? "tool_calls" : "stop"
      }],
      usage: {
        prompt_tokens: prompt,
        completion_tokens: completion,
        total_tokens: prompt + completion,
        ...(thinking === undefined ? {} : { completion_tokens_details: { reasoning_tokens: reasoningTokens } })
      }
    } satisfies ChatCompletion
  })
