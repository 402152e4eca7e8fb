/**
 * The sandbox's answer: deterministic ids from a hash of what shapes the
 * answer, a text reply or a call of the chosen tool whose arguments fit its
 * schema, cut at the requested token limit, with exact usage; `created` comes
 * from Effect's `Clock`.
 */
import { createHash } from "node:crypto"
import { Clock, Effect } from "effect"
import { type ChatCompletion, requestedMaxTokens, type ToolCall } from "../../../services/Chat.ts"
import type { RequestNotTranslatable, UpstreamCall } from "../../../services/Providers.ts"
import { jsonSchemaSample } from "../../support/jsonSchemaSample.ts"
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
