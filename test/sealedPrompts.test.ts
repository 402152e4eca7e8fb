/**
 * Legacy sealed prompts through the real server: a JWE built with the
 * published JWKS (`GET /v1/privacy/keys`, no API key needed) is opened and
 * served like clear messages, by the official `openai` client too; every kind
 * of bad JWE is a 400 that charges nothing, asks nothing upstream and never
 * echoes the plaintext. The key is shared by instances on one database,
 * survives restarts, and rotates with a grace period for the old key.
 */
import { randomBytes } from "node:crypto"
import { CompactEncrypt, exportJWK, generateKeyPair, importJWK, type JWK } from "jose"
import OpenAI from "openai"
import { Effect } from "effect"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { SealedPrompts } from "../services/SealedPrompts.ts"
import { freshDatabase } from "./support/database.ts"
import { type FakeOpenAi, startFakeOpenAi } from "./support/fakeOpenAiUpstream.ts"
import { startGateway, type TestGateway } from "./support/gateway.ts"
import { moneyViolations } from "./support/invariants.ts"

const onPostgres = Boolean(process.env.DATABASE_URL)

let upstream: FakeOpenAi
let gateway: TestGateway

const config = () => ({
  models: [{
    id: "svc/sealed",
    context: 32000,
    pricing: { input: "1.00", output: "2.00" },
    modalities: ["text"],
    capabilities: ["chat", "streaming"]
  }],
  providers: [{
    id: "sealed-upstream",
    plugin: "openai-compatible",
    baseUrl: upstream.baseUrl,
    privacy: { stores: false, logs: false, trains: false },
    deployments: [{ model: "svc/sealed", upstreamModel: "sealed-model" }]
  }]
})

beforeAll(async () => {
  upstream = await startFakeOpenAi()
  gateway = await startGateway({ config: config() })
})
afterEach(async () => {
  expect(await moneyViolations(gateway.query)).toEqual([])
})
afterAll(async () => {
  await gateway?.close()
  await upstream?.close()
})

const publishedKeys = async (on: TestGateway = gateway) => {
  const response = await on.request("GET", "/v1/privacy/keys", { key: null })
  expect(response.status).toBe(200)
  return response.body.keys as Array<JWK & { kid: string }>
}

const seal = async (plaintext: string, jwk: JWK & { kid?: string }, header: Record<string, unknown> = {}) =>
  new CompactEncrypt(new TextEncoder().encode(plaintext))
    .setProtectedHeader({ alg: "ECDH-ES", enc: "A256GCM", ...(jwk.kid ? { kid: jwk.kid } : {}), ...header })
    .encrypt(await importJWK(jwk, "ECDH-ES"))

const sealMessages = async (messages: unknown, jwk?: JWK) =>
  seal(JSON.stringify(messages), jwk ?? (await publishedKeys())[0]!)

const balanceOf = async (accountId: string) =>
  (await gateway.request("GET", `/v1/admin/accounts/${accountId}`)).body.balance_usd as string

describe("sealed prompts (privacy.encryptedPrompt)", () => {
  it("publishes one P-256 ECDH-ES key as a JWKS, to callers with no key", async () => {
    const response = await gateway.request("GET", "/v1/privacy/keys", { key: null })
    expect(response.status).toBe(200)
    expect(response.headers.get("cache-control")).toContain("max-age")
    expect(response.body.keys).toHaveLength(1)
    expect(response.body.keys[0]).toMatchObject({ kty: "EC", crv: "P-256", use: "enc", alg: "ECDH-ES" })
    expect(response.body.keys[0].kid).toMatch(/^[A-Za-z0-9_-]{43}$/)
    // Only the public half: no private scalar.
    expect(response.body.keys[0]).not.toHaveProperty("d")
  })

  it("opens a JWE built with the published JWKS and serves it like clear messages", async () => {
    const { key } = await gateway.account({ credit: "5" })
    const marker = `sealed-${randomBytes(6).toString("hex")}`
    const encryptedPrompt = await sealMessages([{ role: "user", content: `repeat ${marker}` }])
    const response = await gateway.request("POST", "/v1/chat/completions", {
      key,
      body: { model: "svc/sealed", privacy: { encryptedPrompt, class: "protected_provider_route" } }
    })
    expect(response.status).toBe(200)
    expect(response.body.privacy.class).toBe("protected_provider_route")
    // The upstream got the messages in the clear, and the JWE not at all.
    const sent = upstream.requests.at(-1)!.body
    expect(sent.messages).toEqual([{ role: "user", content: `repeat ${marker}` }])
    expect(JSON.stringify(sent)).not.toContain(encryptedPrompt.slice(0, 40))
    expect(response.body.choices[0].message.content).toContain(marker)
    expect(Number(response.headers.get("x-svc-total-usd"))).toBeGreaterThan(0)
  })

  it("works from the official openai client, streamed too", async () => {
    const { key } = await gateway.account({ credit: "5" })
    const client = new OpenAI({ apiKey: key, baseURL: `${gateway.url}/v1`, maxRetries: 0 })
    const encryptedPrompt = await sealMessages([
      { role: "system", content: "be brief" },
      { role: "user", content: "sealed hello" }
    ])
    const body = { model: "svc/sealed", messages: [], privacy: { encryptedPrompt } } as any
    const completion = await client.chat.completions.create(body)
    expect(completion.choices[0]!.message.content).toContain("sealed hello")
    const stream = await client.chat.completions.create({ ...body, stream: true, stream_options: { include_usage: true } }) as
      unknown as AsyncIterable<any>
    let text = ""
    let last: any
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta?.content ?? ""
      last = chunk
    }
    expect(text).toContain("sealed hello")
    expect(last.privacy.class).toBe("standard_route")
  })

  it("refuses every bad JWE with 400 naming privacy.encryptedPrompt, charging nothing and asking nothing upstream", async () => {
    const { id, key } = await gateway.account({ credit: "5" })
    const before = await balanceOf(id)
    const asked = upstream.requests.length
    const [published] = await publishedKeys()
    const secret = `plaintext-${randomBytes(6).toString("hex")}`
    const good = await sealMessages([{ role: "user", content: secret }])
    const [protectedHeader, encryptedKey, iv, ciphertext, tag] = good.split(".")
    const flip = (part: string) => (part[0] === "A" ? "B" : "A") + part.slice(1)
    const stranger = await exportJWK((await generateKeyPair("ECDH-ES", { crv: "P-256", extractable: true })).publicKey)
    const cases: Array<[string, unknown, string]> = [
      ["not a JWE", "hello", "not a compact JWE"],
      ["ciphertext altered", [protectedHeader, encryptedKey, iv, flip(ciphertext!), tag].join("."), "could not be opened"],
      ["tag altered", [protectedHeader, encryptedKey, iv, ciphertext, flip(tag!)].join("."), "could not be opened"],
      ["sealed to another key under our kid", await seal(JSON.stringify([{ role: "user", content: secret }]), { ...stranger, kid: published!.kid }), "could not be opened"],
      ["a kid this gateway does not hold", await seal("[]", { ...stranger, kid: "not-ours" }), "does not hold"],
      ["another content encryption", await seal("[]", published!, { enc: "A128GCM" }), "A256GCM"],
      ["plaintext not JSON", await seal(`${secret} is not json`, published!), "JSON array"],
      ["plaintext an empty array", await seal("[]", published!), "JSON array"],
      ["plaintext a message missing its role", await seal(JSON.stringify([{ content: secret }]), published!), "messages[0]"],
      ["plaintext with a bad role", await seal(JSON.stringify([{ role: "wizard", content: secret }]), published!), "messages[0]"]
    ]
    for (const [name, encryptedPrompt, says] of cases) {
      const response = await gateway.request("POST", "/v1/chat/completions", {
        key,
        body: { model: "svc/sealed", privacy: { encryptedPrompt } }
      })
      expect({ name, status: response.status }).toEqual({ name, status: 400 })
      expect(response.body.error).toMatchObject({ code: "invalid_request", param: "privacy.encryptedPrompt" })
      expect({ name, message: response.body.error.message }).toEqual({ name, message: expect.stringContaining(says) })
      expect(response.text).not.toContain(secret)
    }
    const both = await gateway.request("POST", "/v1/chat/completions", {
      key,
      body: { model: "svc/sealed", messages: [{ role: "user", content: "clear" }], privacy: { encryptedPrompt: good } }
    })
    expect(both.status).toBe(400)
    expect(both.body.error).toMatchObject({ code: "invalid_request", param: "privacy.encryptedPrompt" })
    const neither = await gateway.request("POST", "/v1/chat/completions", { key, body: { model: "svc/sealed" } })
    expect(neither.status).toBe(400)
    expect(neither.body.error).toMatchObject({ code: "invalid_request", param: "messages" })
    expect(upstream.requests.length).toBe(asked)
    expect(await balanceOf(id)).toBe(before)
    const [receipts] = await gateway.query<{ n: number }>("SELECT count(*)::int AS n FROM receipts WHERE account_id = $1", [id])
    expect(receipts!.n).toBe(0)
  })

  it("rotates: the new key is published, and prompts sealed to the old one still open, with or without kid", async () => {
    const { key } = await gateway.account({ credit: "5" })
    const [old] = await publishedKeys()
    const sealedToOld = await sealMessages([{ role: "user", content: "before rotation" }], old)
    // A caller that leaves out `kid`: every key held is tried.
    const { kid: _, ...oldWithoutKid } = old!
    const sealedToOldWithoutKid = await sealMessages([{ role: "user", content: "no kid" }], oldWithoutKid)
    const rotated = await gateway.run(Effect.flatMap(SealedPrompts, (sealed) => sealed.rotate))
    const keys = await publishedKeys()
    expect(keys.map((k) => k.kid)).toEqual([rotated.kid])
    expect(rotated.kid).not.toBe(old!.kid)
    const sealedToNew = await sealMessages([{ role: "user", content: "after rotation" }], keys[0])
    for (const encryptedPrompt of [sealedToOld, sealedToOldWithoutKid, sealedToNew]) {
      const response = await gateway.request("POST", "/v1/chat/completions", {
        key,
        body: { model: "svc/sealed", privacy: { encryptedPrompt } }
      })
      expect(response.status).toBe(200)
    }
  })
})

describe("the sealing key across instances", () => {
  it(
    onPostgres
      ? "instances starting together on one database publish the same key, and it survives restarts"
      : "a restarted instance publishes the same key (one process at a time on the embedded database)",
    async () => {
      const database = await freshDatabase()
      try {
        const together = onPostgres
          ? await Promise.all([1, 2, 3].map(() => startGateway({ config: config(), database })))
          : [await startGateway({ config: config(), database })]
        const kids = await Promise.all(together.map(async (one) => (await publishedKeys(one)).map((k) => k.kid)))
        for (const one of together) await one.close()
        expect(new Set(kids.map((k) => k.join())).size).toBe(1)
        expect(kids[0]).toHaveLength(1)
        const again = await startGateway({ config: config(), database })
        try {
          expect((await publishedKeys(again)).map((k) => k.kid)).toEqual(kids[0])
        } finally {
          await again.close()
        }
      } finally {
        await database.drop()
      }
    },
    120_000
  )
})
