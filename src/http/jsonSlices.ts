/**
 * JSON responses whose `data` list may be huge (2,048 embeddings of
 * thousands of dimensions make 60–170 MB of JSON, 0.5–1.5 s of one
 * `JSON.stringify`): such a body is written as a stream, its list encoded
 * `ITEMS_PER_TURN` items at a time with a turn of the event loop before
 * each slice, so no request waits behind it; the socket's backpressure
 * paces the encoding. Small bodies are encoded at once, as before.
 */
import { HttpServerResponse } from "@effect/platform"
import { Effect, Stream } from "effect"
import { eventLoopTurn } from "../../plugins/support/eventLoopTurn.ts"
import { utf8 } from "./utf8.ts"

/** List items encoded between two turns of the event loop (an embedding of 1,536 floats takes ~0.2 ms). */
export const ITEMS_PER_TURN = 16

/** Stands in for the list while the rest of the body is encoded (a NUL cannot occur in our field values unescaped). */
const MARKER = "\u0000svc-data\u0000"
const MARKER_JSON = JSON.stringify(MARKER)

const isSliceable = (body: unknown): body is { readonly data: ReadonlyArray<unknown> } =>
  typeof body === "object" && body !== null && Array.isArray((body as { data?: unknown }).data) &&
  (body as { data: ReadonlyArray<unknown> }).data.length > ITEMS_PER_TURN

/** `body` as a JSON response; a long `data` list is encoded in slices (see above). */
export const jsonResponse = (
  body: unknown,
  options: { readonly status: number; readonly headers: Readonly<Record<string, string>> }
) => {
  if (!isSliceable(body)) {
    return HttpServerResponse.uint8Array(utf8(JSON.stringify(body)), { ...options, contentType: "application/json" })
  }
  const items = body.data
  const [head, tail] = JSON.stringify({ ...body, data: MARKER }).split(MARKER_JSON) as [string, string]
  const slices = Stream.range(0, Math.ceil(items.length / ITEMS_PER_TURN) - 1).pipe(
    Stream.mapEffect((slice) =>
      Effect.map(eventLoopTurn, () => {
        const start = slice * ITEMS_PER_TURN
        let text = ""
        for (let i = start; i < Math.min(items.length, start + ITEMS_PER_TURN); i++) {
          text += (i === 0 ? "" : ",") + JSON.stringify(items[i])
        }
        return utf8(text)
      })
    )
  )
  return HttpServerResponse.stream(
    Stream.make(utf8(`${head}[`)).pipe(Stream.concat(slices), Stream.concat(Stream.make(utf8(`]${tail}`)))),
    { status: options.status, headers: options.headers, contentType: "application/json" }
  )
}
