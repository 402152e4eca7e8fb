/**
 * The request as sent to one route: its output limited to what the hold
 * reserved for that route's model, so an upstream cannot generate more than
 * was held. A caller's own smaller limit is kept as it is; with none, the
 * reservation goes out as `max_completion_tokens` (each adapter turns it into
 * its upstream's field: Anthropic's `max_tokens`, Gemini's `maxOutputTokens`).
 */
import { type ChatRequest, requestedMaxTokens } from "../../services/Chat.ts"

export const cappedFor = (request: ChatRequest, reservedOutput: number): ChatRequest => {
  // An upstream refuses a limit of 0; a prompt that fills the context leaves none, and one token is the least to ask.
  const cap = Math.max(1, reservedOutput)
  const asked = requestedMaxTokens(request)
  if (asked !== undefined && asked <= cap) return request
  if (request.max_completion_tokens == null && request.max_tokens != null) return { ...request, max_tokens: cap }
  return {
    ...request,
    max_completion_tokens: cap,
    ...(request.max_tokens != null && request.max_tokens > cap ? { max_tokens: cap } : {})
  }
}
