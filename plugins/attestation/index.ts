/** Every attestation verifier kind the gateway ships. Adding one = one new file + one line here. */
import { Layer } from "effect"
import { JwsJsonVerifier } from "./jwsJson.ts"
import { JwtVerifier } from "./jwt.ts"

export const AttestationVerifierPlugins = Layer.mergeAll(
  JwtVerifier,
  JwsJsonVerifier
)
