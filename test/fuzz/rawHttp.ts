/**
 * A bare HTTP/1.1 client over one socket per request, for the fuzz suite:
 * unlike `fetch` it sends whatever bytes it is given (control characters in
 * headers, a `content-length` that lies, raw paths), and it never waits
 * longer than its timeout.
 */
import { connect } from "node:net"

export interface RawRequest {
  readonly method: string
  /** Sent as it is: percent-encoding is the caller's choice. */
  readonly path: string
  readonly headers: ReadonlyArray<readonly [string, string]>
  readonly body?: Buffer | string | undefined
  /** Sent instead of the body's real length (omitted when `null`). */
  readonly contentLength?: number | null | undefined
}

export interface RawResponse {
  readonly status: number
  readonly headers: Record<string, string>
  readonly body: string
}

const decodeChunked = (data: Buffer): Buffer => {
  const parts: Array<Buffer> = []
  let at = 0
  while (at < data.length) {
    const lineEnd = data.indexOf("\r\n", at)
    if (lineEnd < 0) break
    const size = parseInt(data.subarray(at, lineEnd).toString("latin1"), 16)
    if (!Number.isFinite(size) || size === 0) break
    parts.push(data.subarray(lineEnd + 2, lineEnd + 2 + size))
    at = lineEnd + 2 + size + 2
  }
  return Buffer.concat(parts)
}

const parse = (all: Buffer): RawResponse => {
  let data = all
  // Informational answers (`100 Continue`) come before the real one.
  while (/^HTTP\/1\.1 1\d\d /.test(data.subarray(0, 13).toString("latin1"))) {
    const end = data.indexOf("\r\n\r\n")
    if (end < 0) break
    data = data.subarray(end + 4)
  }
  const headEnd = data.indexOf("\r\n\r\n")
  if (headEnd < 0) throw new Error(`no complete response head in ${data.length} bytes: ${data.toString("latin1").slice(0, 200)}`)
  const [statusLine = "", ...lines] = data.subarray(0, headEnd).toString("latin1").split("\r\n")
  const status = Number(statusLine.split(" ")[1])
  const headers: Record<string, string> = {}
  for (const line of lines) {
    const colon = line.indexOf(":")
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim()
  }
  const rest = data.subarray(headEnd + 4)
  const body = headers["transfer-encoding"]?.includes("chunked") === true ? decodeChunked(rest) : rest
  return { status, headers, body: body.toString("utf8") }
}

/** Sends one request on a fresh connection (`connection: close`) and reads the whole answer. */
export const sendRaw = (port: number, request: RawRequest, timeoutMs = 15_000): Promise<RawResponse> =>
  new Promise((resolve, reject) => {
    const chunked = request.headers.some(([name, value]) => name.toLowerCase() === "transfer-encoding" && value === "chunked")
    const raw = request.body === undefined ? undefined : Buffer.from(request.body)
    // A chunked request carries its body as chunks and the terminating empty chunk, and no length.
    const body = !chunked ? raw : Buffer.concat([
      ...(raw === undefined || raw.length === 0 ? [] : [Buffer.from(`${raw.length.toString(16)}\r\n`), raw, Buffer.from("\r\n")]),
      Buffer.from("0\r\n\r\n")
    ])
    const length = chunked ? undefined : request.contentLength === undefined ? body?.length : request.contentLength
    const head = [
      `${request.method} ${request.path} HTTP/1.1`,
      "host: 127.0.0.1",
      "connection: close",
      ...request.headers.map(([name, value]) => `${name}: ${value}`),
      ...(length === undefined || length === null ? [] : [`content-length: ${length}`])
    ].join("\r\n") + "\r\n\r\n"
    const socket = connect(port, "127.0.0.1")
    const received: Array<Buffer> = []
    socket.setTimeout(timeoutMs, () => socket.destroy(new Error(`no answer within ${timeoutMs} ms`)))
    socket.on("data", (chunk) => received.push(chunk))
    socket.on("error", (error) => {
      // The server may answer and close before it read everything we sent (a 413): keep that answer.
      if (received.length > 0) settle()
      else reject(error)
    })
    let settled = false
    const settle = () => {
      if (settled) return
      settled = true
      try {
        resolve(parse(Buffer.concat(received)))
      } catch (error) {
        reject(error)
      }
    }
    socket.on("end", settle)
    socket.on("close", () => settled || (received.length > 0 ? settle() : reject(new Error("closed without an answer"))))
    socket.write(Buffer.from(head, "latin1"))
    if (body !== undefined) socket.write(body)
    // A body shorter than its declared length would leave the server waiting: half-close to end it.
    if (length !== undefined && length !== null && body !== undefined && length > body.length) socket.end()
  })
