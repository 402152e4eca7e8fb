/**
 * The chat-completions wire shapes we accept and return (the common
 * OpenAI-style format plus the spec's extensions). Adapters translate between
 * these and their upstream's format; nothing else in the gateway knows an
 * upstream's shape.
 */
import { Schema } from "effect"
import { PrivacyClass } from "./Config.ts"

/** Fields we forward without interpreting (sampling parameters and the like). */
const PassThrough = Schema.Record({ key: Schema.String, value: Schema.Unknown })

export const TextPart = Schema.Struct({ type: Schema.Literal("text"), text: Schema.String })
export const ImagePart = Schema.Struct({
  type: Schema.Literal("image_url"),
  image_url: Schema.Struct({ url: Schema.String, detail: Schema.optional(Schema.String) })
})
/** Audio and file parts are forwarded as they are. */
export const OtherPart = Schema.Struct({ type: Schema.Literal("input_audio", "file") }, PassThrough)
export const ContentPart = Schema.Union(TextPart, ImagePart, OtherPart)
export type ContentPart = typeof ContentPart.Type

export const ToolCall = Schema.Struct({
  id: Schema.String,
  type: Schema.Literal("function"),
  function: Schema.Struct({ name: Schema.String, arguments: Schema.String })
})
export type ToolCall = typeof ToolCall.Type

const TextContent = Schema.Union(Schema.String, Schema.Array(TextPart))

export const SystemMessage = Schema.Struct({
  role: Schema.Literal("system", "developer"),
  content: TextContent,
  name: Schema.optional(Schema.String)
})
export const UserMessage = Schema.Struct({
  role: Schema.Literal("user"),
  content: Schema.Union(Schema.String, Schema.Array(ContentPart)),
  name: Schema.optional(Schema.String)
})
export const AssistantMessage = Schema.Struct({
  role: Schema.Literal("assistant"),
  content: Schema.optional(Schema.NullOr(TextContent)),
  tool_calls: Schema.optional(Schema.Array(ToolCall)),
  refusal: Schema.optional(Schema.NullOr(Schema.String)),
  name: Schema.optional(Schema.String)
})
export const ToolMessage = Schema.Struct({
  role: Schema.Literal("tool"),
  content: TextContent,
  tool_call_id: Schema.String
})
export const Message = Schema.Union(SystemMessage, UserMessage, AssistantMessage, ToolMessage)
export type Message = typeof Message.Type

export const FunctionTool = Schema.Struct({
  type: Schema.Literal("function"),
  function: Schema.Struct({
    name: Schema.String.pipe(Schema.pattern(/^[A-Za-z0-9_-]{1,64}$/)),
    description: Schema.optional(Schema.String),
    parameters: Schema.optional(PassThrough),
    strict: Schema.optional(Schema.NullOr(Schema.Boolean))
  })
})
export type FunctionTool = typeof FunctionTool.Type

export const ToolChoice = Schema.Union(
  Schema.Literal("none", "auto", "required"),
  Schema.Struct({ type: Schema.Literal("function"), function: Schema.Struct({ name: Schema.String }) })
)
export type ToolChoice = typeof ToolChoice.Type

export const ResponseFormat = Schema.Union(
  Schema.Struct({ type: Schema.Literal("text") }),
  Schema.Struct({ type: Schema.Literal("json_object") }),
  Schema.Struct({
    type: Schema.Literal("json_schema"),
    json_schema: Schema.Struct({
      name: Schema.String,
      description: Schema.optional(Schema.String),
      schema: Schema.optional(PassThrough),
      strict: Schema.optional(Schema.NullOr(Schema.Boolean))
    })
  })
)
export type ResponseFormat = typeof ResponseFormat.Type

/** The spec's privacy envelope (2.3); enforced by the privacy policy. */
export const PrivacyRequest = Schema.Struct({
  class: Schema.optional(Schema.String),
  bestAvailable: Schema.optional(Schema.Boolean),
  allowFallbackToLowerClass: Schema.optional(Schema.Boolean),
  mode: Schema.optional(Schema.String),
  encryptedPrompt: Schema.optional(Schema.String)
})

const TokenCount = Schema.Int.pipe(Schema.positive())

export const ChatRequest = Schema.Struct(
  {
    model: Schema.String.pipe(Schema.minLength(1)),
    /** Required unless they come sealed in `privacy.encryptedPrompt` (checked by the gateway). */
    messages: Schema.optionalWith(Schema.Array(Message), { default: () => [] }),
    stream: Schema.optional(Schema.Boolean),
    stream_options: Schema.optional(Schema.NullOr(Schema.Struct({ include_usage: Schema.optional(Schema.Boolean) }))),
    tools: Schema.optional(Schema.Array(FunctionTool)),
    tool_choice: Schema.optional(ToolChoice),
    response_format: Schema.optional(ResponseFormat),
    max_tokens: Schema.optional(Schema.NullOr(TokenCount)),
    max_completion_tokens: Schema.optional(Schema.NullOr(TokenCount)),
    temperature: Schema.optional(Schema.NullOr(Schema.Number.pipe(Schema.between(0, 2)))),
    top_p: Schema.optional(Schema.NullOr(Schema.Number.pipe(Schema.between(0, 1)))),
    /**
     * One choice per call: each call is held, billed and receipted for one answer, and not every
     * upstream can give several (Anthropic, Gemini). Callers wanting several answers send several calls.
     */
    n: Schema.optional(Schema.NullOr(Schema.Literal(1).annotations({
      message: () => "only 1 is supported: svc bills and receipts one answer per call; send several requests for several answers"
    }))),
    stop: Schema.optional(Schema.NullOr(Schema.Union(Schema.String, Schema.Array(Schema.String)))),
    seed: Schema.optional(Schema.NullOr(Schema.Int)),
    user: Schema.optional(Schema.String),
    /** Extension: ordered fallback model list. */
    models: Schema.optional(Schema.Array(Schema.String)),
    /** Extension: routing strategy. */
    route: Schema.optional(Schema.Literal("auto", "fallback")),
    /** Extension: privacy-class envelope. */
    privacy: Schema.optional(PrivacyRequest)
  },
  PassThrough
).annotations({ identifier: "ChatCompletionRequest" })
export type ChatRequest = typeof ChatRequest.Type

export const FinishReason = Schema.Literal("stop", "length", "tool_calls", "content_filter")
export type FinishReason = typeof FinishReason.Type

export const Usage = Schema.Struct({
  prompt_tokens: Schema.Int,
  completion_tokens: Schema.Int,
  total_tokens: Schema.Int,
  /** As OpenAI reports it: reasoning tokens are part of `completion_tokens` (and billed as output). */
  completion_tokens_details: Schema.optional(Schema.Struct({ reasoning_tokens: Schema.optional(Schema.Int) })),
  prompt_tokens_details: Schema.optional(Schema.Struct({ cached_tokens: Schema.optional(Schema.Int) }))
})
export type Usage = typeof Usage.Type

/** The response's privacy block (spec 2.4). */
export const PrivacyBlockSchema = Schema.Struct({
  class: PrivacyClass,
  label: Schema.String,
  svc_stores_prompts: Schema.Boolean,
  svc_logs_prompts: Schema.Boolean,
  training_on_prompts: Schema.Boolean,
  upstream_disclosed: Schema.Literal(false),
  guarantee: Schema.String
}).annotations({ identifier: "PrivacyBlock" })

export const ChatCompletion = Schema.Struct({
  id: Schema.String,
  object: Schema.Literal("chat.completion"),
  created: Schema.Int,
  model: Schema.String,
  choices: Schema.Array(Schema.Struct({
    index: Schema.Int,
    message: Schema.Struct({
      role: Schema.Literal("assistant"),
      content: Schema.NullOr(Schema.String),
      tool_calls: Schema.optional(Schema.Array(ToolCall)),
      refusal: Schema.optional(Schema.NullOr(Schema.String)),
      /** A reasoning model's thinking, where its upstream shows it (the name DeepSeek, vLLM and the AI SDK use). */
      reasoning_content: Schema.optional(Schema.String)
    }),
    finish_reason: FinishReason,
    logprobs: Schema.optional(Schema.Unknown)
  })),
  usage: Usage,
  /** Set by the gateway on every billable completion. */
  privacy: Schema.optional(PrivacyBlockSchema)
}).annotations({ identifier: "ChatCompletion" })
export type ChatCompletion = typeof ChatCompletion.Type

export const ToolCallDelta = Schema.Struct({
  index: Schema.Int,
  id: Schema.optional(Schema.String),
  type: Schema.optional(Schema.Literal("function")),
  function: Schema.optional(Schema.Struct({
    name: Schema.optional(Schema.String),
    arguments: Schema.optional(Schema.String)
  }))
})
export type ToolCallDelta = typeof ToolCallDelta.Type

/** One SSE frame of a streamed completion. */
export const ChatChunk = Schema.Struct({
  id: Schema.String,
  object: Schema.Literal("chat.completion.chunk"),
  created: Schema.Int,
  model: Schema.String,
  choices: Schema.Array(Schema.Struct({
    index: Schema.Int,
    delta: Schema.Struct({
      role: Schema.optional(Schema.Literal("assistant")),
      content: Schema.optional(Schema.NullOr(Schema.String)),
      tool_calls: Schema.optional(Schema.Array(ToolCallDelta)),
      refusal: Schema.optional(Schema.NullOr(Schema.String)),
      reasoning_content: Schema.optional(Schema.String)
    }),
    finish_reason: Schema.NullOr(FinishReason),
    logprobs: Schema.optional(Schema.Unknown)
  })),
  usage: Schema.optional(Schema.NullOr(Usage)),
  /** On the final chunk of a stream: the class that served it. */
  privacy: Schema.optional(PrivacyBlockSchema)
}).annotations({ identifier: "ChatCompletionChunk" })
export type ChatChunk = typeof ChatChunk.Type

/** Max output tokens the caller asked for, whichever field they used. */
export const requestedMaxTokens = (request: ChatRequest): number | undefined =>
  request.max_completion_tokens ?? request.max_tokens ?? undefined
