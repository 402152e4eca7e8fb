/**
 * What a legacy sealed prompt costs the gateway: opening a compact JWE
 * (ECDH-ES on P-256 + A256GCM, the algorithms layers/privacy/SealedPromptsPg.ts
 * accepts) and decoding its messages, against decoding the same messages sent
 * in the clear. Both run interleaved in one process, so the ratio holds on a
 * noisy machine.
 *
 *   npx tsx bench/sealedPrompt.ts
 */
import { Schema } from "effect"
import { CompactEncrypt, compactDecrypt, generateKeyPair } from "jose"
import { Message } from "../services/Chat.ts"

const decode = Schema.decodeUnknownSync(Schema.parseJson(Schema.Array(Message)))
const messages = [
  { role: "system", content: "You are a careful assistant. ".repeat(8) },
  { role: "user", content: "Summarise the attached note in three bullet points. ".repeat(12) }
]
const clear = JSON.stringify(messages)
const { privateKey, publicKey } = await generateKeyPair("ECDH-ES", { crv: "P-256" })
const sealed = await new CompactEncrypt(new TextEncoder().encode(clear))
  .setProtectedHeader({ alg: "ECDH-ES", enc: "A256GCM" })
  .encrypt(publicKey)
const options = { keyManagementAlgorithms: ["ECDH-ES"], contentEncryptionAlgorithms: ["A256GCM"] }

const openSealed = async () => decode(new TextDecoder().decode((await compactDecrypt(sealed, privateKey, options)).plaintext))
const readClear = async () => decode(clear)

const time = async (run: () => Promise<unknown>, n: number) => {
  const start = performance.now()
  for (let i = 0; i < n; i++) await run()
  return (performance.now() - start) / n
}

// Warm both paths up, then alternate rounds.
await time(openSealed, 500)
await time(readClear, 500)
const rounds: Array<{ sealedUs: number; clearUs: number }> = []
for (let round = 0; round < 5; round++) {
  rounds.push({ sealedUs: (await time(openSealed, 1_000)) * 1000, clearUs: (await time(readClear, 1_000)) * 1000 })
}
const median = (values: Array<number>) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)]!
const sealedUs = median(rounds.map((r) => r.sealedUs))
const clearUs = median(rounds.map((r) => r.clearUs))
console.log(`messages: ${clear.length} bytes; sealed: ${sealed.length} bytes`)
console.log(`per request: sealed ${sealedUs.toFixed(0)} µs, clear ${clearUs.toFixed(0)} µs, added ${(sealedUs - clearUs).toFixed(0)} µs`)
console.log(`rounds (sealed ÷ clear): ${rounds.map((r) => (r.sealedUs / r.clearUs).toFixed(1)).join(", ")}`)
