/**
 * Our neutral request as an OpenAI chat-completions body: the caller's fields
 * pass through, our extensions (`models`, `route`, `privacy`) stay here, and
 * the adapter method decides `stream` (asking for usage on streams).
 */
import type { UpstreamCall } from "../../../services/Providers.ts"
import type { Json } from "../../support/json.ts"

export const chatBody = (call: UpstreamCall, streaming: boolean): Json => {
  const { models: _models, route: _route, privacy: _privacy, stream: _stream, stream_options, ...passThrough } =
    call.request
  return streaming
    ? { ...passThrough, model: call.upstreamModel, stream: true, stream_options: { ...stream_options, include_usage: true } }
    : { ...passThrough, model: call.upstreamModel }
}
