/**
 * A fake confidential runtime on 127.0.0.1: serves its JWKS at `/jwks` and
 * `GET /attestation?nonce=N` with a JWT (ES256) whose behaviour is scripted
 * by `mode`. Counts the requests it gets.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { Effect } from "effect"
import { exportJWK, generateKeyPair, SignJWT } from "jose"
import type { AttestationConfig } from "../../services/Attestation.ts"

export const GOOD_MEASUREMENT = "sha384:good-measurement"
export const OTHER_MEASUREMENT = "sha384:unknown-measurement"

export type RuntimeMode =
  | "valid"
  /** `exp` in the past. */
  | "expired"
  /** `iat` older than any sane `maxAgeSeconds`, `exp` still in the future. */
  | "too_old"
  | "wrong_measurement"
  | "wrong_nonce"
  /** Signed with a key that is not in the JWKS (same `kid`). */
  | "bad_signature"
  /** 503 with `Retry-After`. */
  | "down"
  /** The connection is dropped without an answer. */
  | "hangup"

export interface FakeAttestationRuntime {
  readonly baseUrl: string
  mode: RuntimeMode
  /** `exp - iat` of the tokens issued. */
  ttlSeconds: number
  /** `Retry-After` sent in `down` mode. */
  retryAfter: string
  readonly hits: { attestation: number; jwks: number }
  /** Nonces asked with, in order. */
  readonly nonces: Array<string>
  /** `iat` / `exp` (seconds) of the last token issued. */
  last: { iat: number; exp: number } | undefined
  /** A config pointing at this runtime that allows `GOOD_MEASUREMENT`. */
  readonly config: (overrides?: Partial<AttestationConfig>) => AttestationConfig
}

export const acquireFakeAttestationRuntime = Effect.gen(function*() {
  const { publicKey, privateKey } = yield* Effect.promise(() => generateKeyPair("ES256"))
  const other = yield* Effect.promise(() => generateKeyPair("ES256"))
  const jwk = yield* Effect.promise(() => exportJWK(publicKey))
  const jwks = JSON.stringify({ keys: [{ ...jwk, kid: "runtime-1", alg: "ES256", use: "sig" }] })

  const state = {
    mode: "valid" as RuntimeMode,
    ttlSeconds: 60,
    retryAfter: "1",
    hits: { attestation: 0, jwks: 0 },
    nonces: [] as Array<string>,
    last: undefined as { iat: number; exp: number } | undefined
  }

  const issue = async (nonce: string) => {
    const now = Math.floor(Date.now() / 1000)
    let iat = now
    let exp = now + state.ttlSeconds
    if (state.mode === "expired") {
      iat = now - 120
      exp = now - 60
    }
    if (state.mode === "too_old") {
      iat = now - 3600
      exp = now + 3600
    }
    state.last = { iat, exp }
    return new SignJWT({
      measurement: state.mode === "wrong_measurement" ? OTHER_MEASUREMENT : GOOD_MEASUREMENT,
      nonce: state.mode === "wrong_nonce" ? `not-${nonce}` : nonce
    })
      .setProtectedHeader({ alg: "ES256", kid: "runtime-1", typ: "JWT" })
      .setIssuedAt(iat)
      .setExpirationTime(exp)
      .sign(state.mode === "bad_signature" ? other.privateKey : privateKey)
  }

  const handle = (request: IncomingMessage, response: ServerResponse) => {
    const url = new URL(request.url ?? "/", "http://127.0.0.1")
    if (url.pathname === "/jwks") {
      state.hits.jwks++
      response.writeHead(200, { "content-type": "application/json" }).end(jwks)
      return
    }
    if (url.pathname !== "/attestation") {
      response.writeHead(404).end()
      return
    }
    state.hits.attestation++
    const nonce = url.searchParams.get("nonce") ?? ""
    state.nonces.push(nonce)
    if (state.mode === "down") {
      response.writeHead(503, { "retry-after": state.retryAfter, "content-type": "text/plain" }).end("unavailable")
      return
    }
    if (state.mode === "hangup") {
      request.socket.destroy()
      return
    }
    issue(nonce).then(
      (token) => response.writeHead(200, { "content-type": "application/jwt" }).end(token),
      () => response.writeHead(500).end()
    )
  }

  const server = yield* Effect.acquireRelease(
    Effect.async<ReturnType<typeof createServer>>((resume) => {
      const server = createServer(handle)
      server.listen(0, "127.0.0.1", () => resume(Effect.succeed(server)))
    }),
    (server) =>
      Effect.async<void>((resume) => {
        server.closeAllConnections()
        server.close(() => resume(Effect.void))
      })
  )
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`

  const runtime: FakeAttestationRuntime = Object.assign(state, {
    baseUrl,
    config: (overrides: Partial<AttestationConfig> = {}): AttestationConfig => ({
      url: `${baseUrl}/attestation`,
      jwksUrl: `${baseUrl}/jwks`,
      measurements: [GOOD_MEASUREMENT],
      maxAgeSeconds: 300,
      ...overrides
    })
  })
  return runtime
})

/** A 127.0.0.1 port nobody listens on (bound, then closed). */
export const closedPort = Effect.async<number>((resume) => {
  const server = createServer()
  server.listen(0, "127.0.0.1", () => {
    const port = (server.address() as AddressInfo).port
    server.close(() => resume(Effect.succeed(port)))
  })
})
