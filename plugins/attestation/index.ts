/** Every attestation verifier kind the gateway ships. Adding one = one new file + one line here. */
import { Layer } from "effect"
import { JwtVerifier } from "./jwt.ts"

export const AttestationVerifierPlugins = Layer.mergeAll(
  JwtVerifier
)
