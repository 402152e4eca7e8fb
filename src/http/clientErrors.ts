/**
 * Requests Node's HTTP parser refuses (a control character in a header, a
 * malformed request line, a `content-length` that is not a number, headers
 * over Node's 16 KiB, an `Expect` other than `100-continue`) never reach the
 * API, and Node would answer them with an empty 400 (or 417). Here they get
 * the contract's envelope and a request id too.
 */
import type { Server } from "node:http"
import { STATUS_CODES } from "node:http"
import type { Duplex } from "node:stream"
import { envelopeOf, InvalidRequest, PayloadTooLarge, statusOf } from "../../services/ApiError.ts"

const refusalOf = (code: string | undefined) =>
  code === "HPE_HEADER_OVERFLOW"
    ? new PayloadTooLarge({ message: "The request headers are larger than the limit (16 KiB)." })
    : new InvalidRequest({ message: "The request is not valid HTTP/1.1 (a malformed request line, header or length)." })

const answer = (refusal: InvalidRequest | PayloadTooLarge, id: string) => {
  const body = JSON.stringify(envelopeOf(refusal, id))
  const status = statusOf(refusal)
  return `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\ncontent-type: application/json\r\n` +
    `content-length: ${Buffer.byteLength(body)}\r\nx-request-id: ${id}\r\nconnection: close\r\n\r\n${body}`
}

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
