/**
 * A fake confidential runtime on 127.0.0.1: serves its JWKS at `/jwks` and
 * `GET /attestation?nonce=N` with evidence signed with ES256 — a JWT, or a
 * flattened JSON JWS when `format` is `jws-json` — whose behaviour is
 * scripted by `mode`. Counts the requests it gets.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { Effect } from "effect"
import { exportJWK, FlattenedSign, generateKeyPair, SignJWT } from "jose"
import type { RuntimeEndpoints } from "../../plugins/attestation/evidence.ts"
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
  /** Signed with the right key, then the payload swapped for one claiming another measurement. */
  | "tampered"
  /** 503 with `Retry-After`. */
  | "down"
  /** The connection is dropped without an answer. */
  | "hangup"

/** The evidence format, and the `kind` its config names (none for `jwt`, the default). */
export type EvidenceFormat = "jwt" | "jws-json"

/** An attestation block pointing at a runtime over HTTP. */
export type RuntimeAttestation = AttestationConfig & RuntimeEndpoints

export interface FakeAttestationRuntime {
  readonly baseUrl: string
  mode: RuntimeMode
  format: EvidenceFormat
  /** `exp - iat` of the tokens issued. */
  ttlSeconds: number
  /** `Retry-After` sent in `down` mode. */
  retryAfter: string
  readonly hits: { attestation: number; jwks: number }
  /** Nonces asked with, in order. */
  readonly nonces: Array<string>
  /** `iat` / `exp` (seconds) of the last token issued. */
  last: { iat: number; exp: number } | undefined
  /** A config pointing at this runtime that allows `GOOD_MEASUREMENT` (with `kind` unless the format is `jwt`). */
  readonly config: (overrides?: Partial<RuntimeAttestation>) => RuntimeAttestation
}

export const acquireFakeAttestationRuntime = Effect.gen(function*() {
  const { publicKey, privateKey } = yield* Effect.promise(() => generateKeyPair("ES256"))
  const other = yield* Effect.promise(() => generateKeyPair("ES256"))
  const jwk = yield* Effect.promise(() => exportJWK(publicKey))
  const jwks = JSON.stringify({ keys: [{ ...jwk, kid: "runtime-1", alg: "ES256", use: "sig" }] })

  const state = {
    mode: "valid" as RuntimeMode,
    format: "jwt" as EvidenceFormat,
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
    const claims = {
      measurement: state.mode === "wrong_measurement" ? OTHER_MEASUREMENT : GOOD_MEASUREMENT,
      nonce: state.mode === "wrong_nonce" ? `not-${nonce}` : nonce
    }
    const key = state.mode === "bad_signature" ? other.privateKey : privateKey
    const forged = base64url({ ...claims, measurement: OTHER_MEASUREMENT, iat, exp })
    if (state.format === "jws-json") {
      const jws = await new FlattenedSign(new TextEncoder().encode(JSON.stringify({ ...claims, iat, exp })))
        .setProtectedHeader({ alg: "ES256", kid: "runtime-1" })
        .sign(key)
      return JSON.stringify(state.mode === "tampered" ? { ...jws, payload: forged } : jws)
    }
    const token = await new SignJWT(claims)
      .setProtectedHeader({ alg: "ES256", kid: "runtime-1", typ: "JWT" })
      .setIssuedAt(iat)
      .setExpirationTime(exp)
      .sign(key)
    if (state.mode !== "tampered") return token
    const [header, , signature] = token.split(".")
    return `${header}.${forged}.${signature}`
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
    const contentType = state.format === "jws-json" ? "application/jose+json" : "application/jwt"
    issue(nonce).then(
      (evidence) => response.writeHead(200, { "content-type": contentType }).end(evidence),
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
    config: (overrides: Partial<RuntimeAttestation> = {}): RuntimeAttestation => ({
      ...(state.format === "jwt" ? {} : { kind: state.format }),
      url: `${baseUrl}/attestation`,
      jwksUrl: `${baseUrl}/jwks`,
      measurements: [GOOD_MEASUREMENT],
      maxAgeSeconds: 300,
      ...overrides
    })
  })
  return runtime
})

const base64url = (json: unknown) => Buffer.from(JSON.stringify(json)).toString("base64url")

/** A 127.0.0.1 port nobody listens on (bound, then closed). */
export const closedPort = Effect.async<number>((resume) => {
  const server = createServer()
  server.listen(0, "127.0.0.1", () => {
    const port = (server.address() as AddressInfo).port
    server.close(() => resume(Effect.succeed(port)))
  })
})
