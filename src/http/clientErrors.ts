/**
 * Requests Node's HTTP parser refuses (a control character in a header, a
 * malformed request line, a `content-length` that is not a number, headers
 * over Node's 16 KiB, an `Expect` other than `100-continue`) never reach the
 * API, and Node would answer them with an empty 400 (or 417). Here they get
 * the contract's envelope and a request id too. So does a request whose
 * headers and body are not all received within `limits.requestTimeoutMs`
 * (a slow or never-finished upload): 408, and the connection is closed.
 */
import type { Server, ServerOptions } from "node:http"
import { STATUS_CODES } from "node:http"
import type { Duplex } from "node:stream"
import { envelopeOf, InvalidRequest, PayloadTooLarge, RequestTimeout, statusOf } from "../../services/ApiError.ts"

type Refusal = InvalidRequest | PayloadTooLarge | RequestTimeout

const refusalOf = (code: string | undefined): Refusal => {
  switch (code) {
    case "HPE_HEADER_OVERFLOW":
      return new PayloadTooLarge({ message: "The request headers are larger than the limit (16 KiB)." })
    case "ERR_HTTP_REQUEST_TIMEOUT":
      return new RequestTimeout({ message: "The request was not received in time (limits.requestTimeoutMs)." })
    default:
      return new InvalidRequest({ message: "The request is not valid HTTP/1.1 (a malformed request line, header or length)." })
  }
}

const answer = (refusal: Refusal, id: string) => {
  const body = JSON.stringify(envelopeOf(refusal, id))
  const status = statusOf(refusal)
  return `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\ncontent-type: application/json\r\n` +
    `content-length: ${Buffer.byteLength(body)}\r\nx-request-id: ${id}\r\nconnection: close\r\n\r\n${body}`
}

/**
 * Options of the HTTP server that bound how long a client may take to send a request: its
 * headers and body within `requestTimeoutMs` (Node checks on a timer, at a fraction of that).
 */
export const requestTimeouts = (requestTimeoutMs: number): ServerOptions => ({
  requestTimeout: requestTimeoutMs,
  headersTimeout: Math.min(60_000, requestTimeoutMs),
  connectionsCheckingInterval: Math.min(30_000, Math.max(100, Math.floor(requestTimeoutMs / 4)))
})

/** Answers what the parser refuses on `server`; `requestId` names each answer. */
export const answerClientErrors = (server: Server, requestId: () => string): Server =>
  server.on("checkExpectation", (request, response) => {
    const refusal = new InvalidRequest({ message: "Only `Expect: 100-continue` is understood." })
    response.socket?.end(answer(refusal, requestId()))
    request.resume()
  }).on("clientError", (error: NodeJS.ErrnoException, socket: Duplex) => {
    const started = (socket as { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent === true
    if (error.code === "ECONNRESET" || !socket.writable || started) {
      socket.destroy()
      return
    }
    socket.end(answer(refusalOf(error.code), requestId()))
  })
