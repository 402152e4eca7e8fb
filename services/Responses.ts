/**
 * The OpenAI Responses API wire shapes we accept and return
 * (`POST /v1/responses`). A Responses call is served as a chat call: the
 * request is translated to a `ChatRequest` and the completion back, so
 * routing, privacy, billing and receipts are the chat pipeline's. Stateless:
 * nothing is stored to be referred to later (`store: false` semantics).
 */
import { Schema } from "effect"
import { PrivacyBlockSchema, PrivacyRequest } from "./Chat.ts"

const PassThrough = Schema.Record({ key: Schema.String, value: Schema.Unknown })
const TokenCount = Schema.Int.pipe(Schema.positive())

export const InputText = Schema.Struct({ type: Schema.Literal("input_text", "output_text"), text: Schema.String })
export const InputImage = Schema.Struct({
  type: Schema.Literal("input_image"),
  image_url: Schema.String,
  detail: Schema.optional(Schema.String)
})
export const Refusal = Schema.Struct({ type: Schema.Literal("refusal"), refusal: Schema.String })
export const InputPart = Schema.Union(InputText, InputImage, Refusal)
export type InputPart = typeof InputPart.Type

export const MessageItem = Schema.Struct({
  type: Schema.optional(Schema.Literal("message")),
  role: Schema.Literal("user", "assistant", "system", "developer"),
  content: Schema.Union(Schema.String, Schema.Array(InputPart))
})
export const FunctionCallItem = Schema.Struct({
  type: Schema.Literal("function_call"),
  call_id: Schema.String,
  name: Schema.String,
  arguments: Schema.String
})
export const FunctionCallOutputItem = Schema.Struct({
  type: Schema.Literal("function_call_output"),
  call_id: Schema.String,
  output: Schema.Union(Schema.String, Schema.Array(InputPart))
})
/** Any other item (`item_reference`, `reasoning`, built-in tool calls…): the translator says which it refuses. */
export const OtherItem = Schema.Struct({ type: Schema.String }, PassThrough)
export const InputItem = Schema.Union(MessageItem, FunctionCallItem, FunctionCallOutputItem, OtherItem)
export type InputItem = typeof InputItem.Type

export const ResponsesFunctionTool = Schema.Struct({
  type: Schema.Literal("function"),
  name: Schema.String.pipe(Schema.pattern(/^[A-Za-z0-9_-]{1,64}$/)),
  description: Schema.optional(Schema.NullOr(Schema.String)),
  parameters: Schema.optional(Schema.NullOr(PassThrough)),
  strict: Schema.optional(Schema.NullOr(Schema.Boolean))
})
/** Built-in tools (web search, file search, …) are refused by name. */
export const OtherTool = Schema.Struct({ type: Schema.String }, PassThrough)

export const TextFormat = Schema.Union(
  Schema.Struct({ type: Schema.Literal("text") }),
  Schema.Struct({ type: Schema.Literal("json_object") }),
  Schema.Struct({
    type: Schema.Literal("json_schema"),
    name: Schema.String,
    description: Schema.optional(Schema.String),
    schema: PassThrough,
    strict: Schema.optional(Schema.NullOr(Schema.Boolean))
  })
)

export const ResponsesRequest = Schema.Struct(
  {
    model: Schema.String.pipe(Schema.minLength(1)),
    input: Schema.Union(Schema.String, Schema.Array(InputItem)),
    instructions: Schema.optional(Schema.NullOr(Schema.String)),
    tools: Schema.optional(Schema.Array(Schema.Union(ResponsesFunctionTool, OtherTool))),
    tool_choice: Schema.optional(Schema.Union(
      Schema.Literal("none", "auto", "required"),
      Schema.Struct({ type: Schema.Literal("function"), name: Schema.String })
    )),
    text: Schema.optional(Schema.NullOr(Schema.Struct({ format: Schema.optional(TextFormat) }))),
    max_output_tokens: Schema.optional(Schema.NullOr(TokenCount)),
    temperature: Schema.optional(Schema.NullOr(Schema.Number.pipe(Schema.between(0, 2)))),
    top_p: Schema.optional(Schema.NullOr(Schema.Number.pipe(Schema.between(0, 1)))),
    reasoning: Schema.optional(Schema.NullOr(Schema.Struct({ effort: Schema.optional(Schema.NullOr(Schema.String)) }))),
    stream: Schema.optional(Schema.Boolean),
    /** Accepted and ignored: nothing is kept to refer to later, whatever it says. */
    store: Schema.optional(Schema.NullOr(Schema.Boolean)),
    /** Refused when set: there is no stored response to continue from. */
    previous_response_id: Schema.optional(Schema.NullOr(Schema.String)),
    background: Schema.optional(Schema.NullOr(Schema.Boolean)),
    conversation: Schema.optional(Schema.NullOr(Schema.Unknown)),
    /** Extensions, as on chat completions. */
    models: Schema.optional(Schema.Array(Schema.String)),
    route: Schema.optional(Schema.Literal("auto", "fallback")),
    privacy: Schema.optional(PrivacyRequest)
  },
  PassThrough
).annotations({ identifier: "ResponsesRequest" })
export type ResponsesRequest = typeof ResponsesRequest.Type

export const OutputText = Schema.Struct({
  type: Schema.Literal("output_text"),
  text: Schema.String,
  annotations: Schema.Array(Schema.Unknown)
})
export const OutputMessage = Schema.Struct({
  type: Schema.Literal("message"),
  id: Schema.String,
  status: Schema.Literal("completed", "incomplete", "in_progress"),
  role: Schema.Literal("assistant"),
  content: Schema.Array(OutputText)
})
export const OutputFunctionCall = Schema.Struct({
  type: Schema.Literal("function_call"),
  id: Schema.String,
  call_id: Schema.String,
  name: Schema.String,
  arguments: Schema.String,
  status: Schema.Literal("completed", "incomplete", "in_progress")
})
export const OutputItem = Schema.Union(OutputMessage, OutputFunctionCall)
export type OutputItem = typeof OutputItem.Type

export const ResponsesUsage = Schema.Struct({
  input_tokens: Schema.Int,
  input_tokens_details: Schema.Struct({ cached_tokens: Schema.Int }),
  output_tokens: Schema.Int,
  output_tokens_details: Schema.Struct({ reasoning_tokens: Schema.Int }),
  total_tokens: Schema.Int
})

export const ResponseObject = Schema.Struct({
  id: Schema.String,
  object: Schema.Literal("response"),
  created_at: Schema.Int,
  status: Schema.Literal("completed", "incomplete", "in_progress", "failed"),
  incomplete_details: Schema.NullOr(Schema.Struct({ reason: Schema.String })),
  error: Schema.NullOr(Schema.Struct({ code: Schema.String, message: Schema.String })),
  model: Schema.String,
  output: Schema.Array(OutputItem),
  usage: Schema.NullOr(ResponsesUsage),
  store: Schema.Literal(false),
  /** Set on every billable response (spec 2.4). */
  privacy: Schema.optional(PrivacyBlockSchema)
}).annotations({ identifier: "Response" })
export type ResponseObject = typeof ResponseObject.Type
