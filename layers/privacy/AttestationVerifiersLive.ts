/** The attestation-verifier registry: filled by the verifier Layers at start, read when the catalogue is built and per verification. */
import { AttestationVerifiers } from "../../services/Attestation.ts"
import { registryLive } from "../platform/RegistryLive.ts"

export const AttestationVerifiersLive = registryLive(AttestationVerifiers, "attestation verifier")
