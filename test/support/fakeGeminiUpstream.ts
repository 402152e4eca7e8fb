/**
 * A fake Gemini API on a real HTTP server (127.0.0.1, random port), speaking
 * Gemini's wire format (`:generateContent`, `:streamGenerateContent?alt=sse`
 * with CRLF-separated frames, `:batchEmbedContents`), scriptable per request,
 * for adapter and end-to-end tests.
 */
import type { ServerResponse } from "node:http"
import { Effect } from "effect"
import { type FakeServer, startFakeServer } from "./fakeServer.ts"
import { sampleFromSchema } from "./fakeOpenAiUpstream.ts"

export type { RecordedRequest } from "./fakeServer.ts"

/** How to answer; the empty behaviour is a well-behaved upstream. */
export interface Behaviour {
  /** Answer with this status and `errorBody` (default: a Gemini-style error object). */
  readonly status?: number
  readonly errorBody?: unknown
  /** `Retry-After` header value sent with a 429 or 503 `status`. */
  readonly retryAfter?: string
  /** Wait before sending headers (to trip header timeouts). */
  readonly delayHeadersMs?: number
  /** Wait between SSE frames. */
  readonly chunkDelayMs?: number
  /** Send this many SSE frames, then keep the connection open forever (JSON: half a body). */
  readonly hangAfterChunks?: number
  /** Send this many SSE frames, then destroy the socket (JSON: half a body). */
  readonly resetAfterChunks?: number
  /** Destroy the socket before sending anything. */
  readonly resetBeforeHeaders?: boolean
  /** Send this many SSE frames, then one that is not JSON, then end. */
  readonly malformedFrameAfter?: number
  /** No frame carries a finish reason (a stream cut off at a frame boundary). */
  readonly noFinishReason?: boolean
  /** The candidate's finish reason instead of STOP (e.g. SAFETY, MAX_TOKENS). */
  readonly finishReason?: string
  /** Block the prompt: no candidates, `promptFeedback.blockReason` set. */
  readonly blockReason?: string
  /** Send exactly this body instead of a generated answer. */
  readonly raw?: { readonly body: string; readonly contentType?: string; readonly status?: number }
}

export interface FakeGemini extends FakeServer<Behaviour> {
  /** Ends in `/v1beta`, like the real API. */
  readonly baseUrl: string
}

/** Fields a real Gemini adds that the gateway must not reveal. */
export const FAKE_RESPONSE_ID = "gemini-resp-fake-9f3a"
export const FAKE_MODEL_VERSION_SUFFIX = "-fake-build-0417"
/** Realistic thinking overhead, billed as output. */
export const FAKE_THOUGHT_TOKENS = 2

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

type Json = Record<string, any>

const wordCount = (text: string) => text.split(/\s+/).filter(Boolean).length

const partsText = (content: Json | undefined): string =>
  (content?.parts ?? []).filter((part: Json) => typeof part?.text === "string").map((part: Json) => part.text).join("")

interface Answer {
  readonly parts: ReadonlyArray<Json>
  /** Text split over frames for streaming; a function call goes in one frame. */
  readonly pieces: ReadonlyArray<Json>
  readonly usage: Json
}

const answerFor = (body: Json, model: string): Answer => {
  const contents: Array<Json> = body.contents ?? []
  const last = contents.at(-1)
  const promptTokens = contents.reduce((n, c) => n + wordCount(partsText(c)), 0) +
    wordCount(partsText(body.systemInstruction)) + 1
  const usageFor = (candidates: number) => ({
    promptTokenCount: promptTokens,
    candidatesTokenCount: candidates,
    thoughtsTokenCount: FAKE_THOUGHT_TOKENS,
    totalTokenCount: promptTokens + candidates + FAKE_THOUGHT_TOKENS,
    promptTokensDetails: [{ modality: "TEXT", tokenCount: promptTokens }]
  })
  const declaration = body.tools?.[0]?.functionDeclarations?.[0]
  const calling = body.toolConfig?.functionCallingConfig ?? {}
  const answered = (last?.parts ?? []).find((part: Json) => part?.functionResponse)?.functionResponse
  // A function result is answered in words, as a model would; otherwise tools are called when allowed.
  if (declaration && calling.mode !== "NONE" && !answered) {
    const name = calling.allowedFunctionNames?.[0] ?? declaration.name
    const chosen = body.tools[0].functionDeclarations.find((d: Json) => d.name === name) ?? declaration
    const call = { functionCall: { name, args: sampleFromSchema(chosen.parameters) } }
    return { parts: [call], pieces: [call], usage: usageFor(5) }
  }
  const config = body.generationConfig ?? {}
  const text = answered
    ? `${answered.name} said ${JSON.stringify(answered.response)}`
    : config.responseMimeType === "application/json"
    ? JSON.stringify(config.responseSchema ? sampleFromSchema(config.responseSchema) : { text: partsText(last) })
    : [...contents].reverse().map(partsText).find((t) => t !== "") ?? `hello from ${model}`
  const words = text.match(/\S+\s*/g) ?? [text]
  return { parts: [{ text }], pieces: words.map((word) => ({ text: word })), usage: usageFor(words.length) }
}

const SAFETY_RATINGS = [{ category: "HARM_CATEGORY_HARASSMENT", probability: "NEGLIGIBLE" }]

const responseJson = (model: string, candidate: Json | undefined, usage: Json, behaviour: Behaviour): Json =>
  behaviour.blockReason
    ? {
      promptFeedback: { blockReason: behaviour.blockReason, safetyRatings: SAFETY_RATINGS },
      usageMetadata: { promptTokenCount: usage.promptTokenCount, totalTokenCount: usage.promptTokenCount },
      modelVersion: `${model}${FAKE_MODEL_VERSION_SUFFIX}`,
      responseId: FAKE_RESPONSE_ID
    }
    : {
      candidates: candidate ? [{ ...candidate, index: 0, safetyRatings: SAFETY_RATINGS }] : [],
      usageMetadata: usage,
      modelVersion: `${model}${FAKE_MODEL_VERSION_SUFFIX}`,
      responseId: FAKE_RESPONSE_ID
    }

/** Frames as Gemini streams them: usage so far on each, the finish reason and full usage on the last. */
const framesFor = (model: string, reply: Answer, behaviour: Behaviour): Array<Json> => {
  if (behaviour.blockReason) return [responseJson(model, undefined, reply.usage, behaviour)]
  return reply.pieces.map((piece, i) => {
    const last = i === reply.pieces.length - 1
    const finish = last && !behaviour.noFinishReason ? { finishReason: behaviour.finishReason ?? "STOP" } : {}
    const usage = last
      ? reply.usage
      : { promptTokenCount: reply.usage.promptTokenCount, totalTokenCount: reply.usage.promptTokenCount }
    return responseJson(model, { content: { role: "model", parts: [piece] }, ...finish }, usage, behaviour)
  })
}

const write = (res: ServerResponse, text: string) => {
  if (!res.destroyed) res.write(text)
}

const errorJson = (status: number) => ({
  error: {
    code: status,
    message: "fake gemini error",
    status: status === 429 ? "RESOURCE_EXHAUSTED" : status === 400 ? "INVALID_ARGUMENT" : "INTERNAL"
  }
})

const answer = async (res: ServerResponse, model: string, method: string, body: Json, behaviour: Behaviour, reset: () => void) => {
  if (behaviour.resetBeforeHeaders) return reset()
  if (behaviour.delayHeadersMs) await sleep(behaviour.delayHeadersMs)
  if (res.destroyed) return
  if (behaviour.raw) {
    res.writeHead(behaviour.raw.status ?? 200, { "content-type": behaviour.raw.contentType ?? "application/json" })
    return res.end(behaviour.raw.body)
  }
  if (behaviour.status) {
    const retry = behaviour.retryAfter !== undefined && (behaviour.status === 429 || behaviour.status === 503)
    res.writeHead(behaviour.status, {
      "content-type": "application/json",
      ...(retry ? { "retry-after": behaviour.retryAfter } : {})
    })
    const error = behaviour.errorBody ?? errorJson(behaviour.status)
    return res.end(typeof error === "string" ? error : JSON.stringify(error))
  }
  if (method === "batchEmbedContents") {
    // One small vector per input: its word count, then 0.5s. No usage, as with the real API.
    res.writeHead(200, { "content-type": "application/json" })
    return res.end(JSON.stringify({
      embeddings: (body.requests ?? []).map((request: Json) => ({
        values: Array.from(
          { length: Number.isInteger(request.outputDimensionality) ? request.outputDimensionality : 4 },
          (_, i) => (i === 0 ? wordCount(partsText(request.content)) : 0.5)
        )
      }))
    }))
  }
  const reply = answerFor(body, model)
  if (method === "generateContent") {
    const finish = behaviour.noFinishReason ? {} : { finishReason: behaviour.finishReason ?? "STOP" }
    const json = JSON.stringify(responseJson(model, { content: { role: "model", parts: reply.parts }, ...finish }, reply.usage, behaviour))
    res.writeHead(200, { "content-type": "application/json; charset=UTF-8" })
    if (behaviour.hangAfterChunks !== undefined) return write(res, json.slice(0, json.length / 2))
    if (behaviour.resetAfterChunks !== undefined) {
      write(res, json.slice(0, json.length / 2))
      return setTimeout(reset, 50)
    }
    return res.end(json)
  }
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" })
  for (const [i, frame] of framesFor(model, reply, behaviour).entries()) {
    if (i === behaviour.hangAfterChunks) return
    if (i === behaviour.resetAfterChunks) {
      // Let the frames sent so far reach the client first.
      await sleep(50)
      return reset()
    }
    if (i === behaviour.malformedFrameAfter) {
      // In a packet of its own, as a broken frame from a real upstream would usually be.
      await sleep(50)
      write(res, "data: {\"candidates\": [{\"content\": \r\n\r\n")
      return res.end()
    }
    if (i > 0 && behaviour.chunkDelayMs) await sleep(behaviour.chunkDelayMs)
    write(res, `data: ${JSON.stringify(frame)}\r\n\r\n`)
  }
  if (!res.destroyed) res.end()
}

export const startFakeGemini = (): Promise<FakeGemini> =>
  startFakeServer<Behaviour>({
    basePath: "/v1beta",
    handle: ({ req, res, path, body, behaviour, reset }) => {
      const route = /^\/v1beta\/models\/([^/:?]+):(generateContent|streamGenerateContent|batchEmbedContents)(\?.*)?$/.exec(path)
      const streaming = route?.[2] === "streamGenerateContent"
      if (req.method !== "POST" || !route || (streaming && route[3] !== "?alt=sse")) {
        res.writeHead(404, { "content-type": "application/json" })
        return res.end(JSON.stringify({ error: { code: 404, message: `no route ${req.method} ${path}`, status: "NOT_FOUND" } }))
      }
      return answer(res, route[1], route[2], typeof body === "object" && body !== null ? body : {}, behaviour(), reset)
    }
  })

/** The fake Gemini for the current scope. */
export const acquireFakeGemini = Effect.acquireRelease(
  Effect.promise(startFakeGemini),
  (upstream) => Effect.promise(upstream.close)
)
