/**
 * The time to refuse a 5 MB prompt of one repeated character from a key with
 * no money (it must be 402 insufficient_funds, and quick: the token count is
 * linear), beside a normal call's latency on the same server, one after the
 * other over real HTTP.
 */
import { median } from "./children.ts"

export const VAST_MODEL = "svc/bench-vast"

const ROUNDS = 5

const timed = async (url: string, key: string, body: string) => {
  const started = performance.now()
  const response = await fetch(`${url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
    body
  })
  const text = await response.text()
  return { ms: performance.now() - started, status: response.status, text }
}

export const measureRefusal = async (
  gateway: { readonly url: string; readonly key?: string; readonly brokeKey?: string },
  normalBody: string
): Promise<string> => {
  const pathological = JSON.stringify({ model: VAST_MODEL, messages: [{ role: "user", content: "A".repeat(5_000_000) }] })
  const refusals: Array<number> = []
  const normals: Array<number> = []
  for (let round = 0; round < ROUNDS; round++) {
    const refused = await timed(gateway.url, gateway.brokeKey!, pathological)
    if (refused.status !== 402 || !refused.text.includes("insufficient_funds")) {
      throw new Error(`refusal: ${refused.status} ${refused.text.slice(0, 300)}`)
    }
    refusals.push(refused.ms)
    const normal = await timed(gateway.url, gateway.key!, normalBody)
    if (normal.status !== 200) throw new Error(`normal call: ${normal.status} ${normal.text.slice(0, 300)}`)
    normals.push(normal.ms)
  }
  const refusal = median(refusals)
  const normal = median(normals)
  return `Refusing a 5 MB one-character prompt from a $0 key (402, over HTTP, body upload included): ` +
    `**${refusal.toFixed(1)} ms** median of ${ROUNDS}; a normal JSON call: ${normal.toFixed(2)} ms ` +
    `(ratio ${(refusal / normal).toFixed(1)}).`
}
