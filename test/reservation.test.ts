/**
 * What a call reserves, end to end over real sockets: the upstream is asked
 * for at most the output the hold reserved, media parts are reserved by their
 * size so an upstream's real count is charged in full, and a 5 MB prompt of
 * one repeated character from a key with no money is refused with 402.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type FakeAnthropic, startFakeAnthropic } from "./support/fakeAnthropicUpstream.ts"
import { type FakeOpenAi, startFakeOpenAi } from "./support/fakeOpenAiUpstream.ts"
import { startGateway, type TestGateway } from "./support/gateway.ts"

let openai: FakeOpenAi
let anthropic: FakeAnthropic
let gateway: TestGateway
let key: string

const model = (id: string, context: number) => ({
  id,
  context,
  pricing: { input: "1.00", output: "2.00" },
  modalities: ["text", "image"],
  capabilities: ["chat", "streaming", "vision"]
})

beforeAll(async () => {
  openai = await startFakeOpenAi()
  anthropic = await startFakeAnthropic()
  gateway = await startGateway({
    config: {
      models: [model("svc/roomy", 128_000), model("svc/tight", 600), model("svc/claude-tight", 600), model("svc/vast", 50_000_000)],
      providers: [
        {
          id: "compatible",
          plugin: "openai-compatible",
          baseUrl: openai.baseUrl,
          deployments: [
            { model: "svc/roomy", upstreamModel: "roomy-1" },
            { model: "svc/tight", upstreamModel: "tight-1" },
            { model: "svc/vast", upstreamModel: "vast-1" }
          ]
        },
        {
          id: "claude",
          plugin: "anthropic",
          baseUrl: anthropic.baseUrl,
          deployments: [{ model: "svc/claude-tight", upstreamModel: "claude-tight-1" }]
        }
      ]
    }
  })
  key = (await gateway.account()).key
})
afterAll(async () => {
  await gateway?.close()
  await openai?.close()
  await anthropic?.close()
})

const chat = (body: unknown, as = key) =>
  gateway.request("POST", "/v1/chat/completions", { body, key: as })

const hello = [{ role: "user", content: "hello there" }]
const lastBody = (upstream: FakeOpenAi | FakeAnthropic) => upstream.requests.at(-1)!.body

describe("the upstream's output limit is the output the hold reserved", () => {
  it("sends the default allowance when the caller sets no limit, for whole and streamed calls", async () => {
    expect((await chat({ model: "svc/roomy", messages: hello })).status).toBe(200)
    expect(lastBody(openai)).toMatchObject({ max_completion_tokens: 4096 })
    expect((await chat({ model: "svc/roomy", messages: hello, stream: true })).status).toBe(200)
    expect(lastBody(openai)).toMatchObject({ max_completion_tokens: 4096, stream: true })
  })

  it("sends what the context leaves when that is less, to Anthropic too instead of its default", async () => {
    expect((await chat({ model: "svc/tight", messages: hello })).status).toBe(200)
    const sent = lastBody(openai).max_completion_tokens
    expect(sent).toBeLessThan(600)
    expect(sent).toBeGreaterThan(500)
    expect((await chat({ model: "svc/claude-tight", messages: hello })).status).toBe(200)
    expect(lastBody(anthropic).max_tokens).toBe(sent)
  })

  it("keeps the caller's own limit in the caller's own field", async () => {
    expect((await chat({ model: "svc/roomy", messages: hello, max_tokens: 50 })).status).toBe(200)
    expect(lastBody(openai).max_tokens).toBe(50)
    expect(lastBody(openai)).not.toHaveProperty("max_completion_tokens")
  })
})

describe("media parts are reserved by their size", () => {
  /** A 1024×1024 PNG header: OpenAI's high-detail rule makes it 765 tokens. */
  const png = (() => {
    const head = Buffer.alloc(33)
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]).copy(head, 0)
    head.write("IHDR", 12, "latin1")
    head.writeUInt32BE(1024, 16)
    head.writeUInt32BE(1024, 20)
    return `data:image/png;base64,${head.toString("base64")}`
  })()

  /** The upstream reports this usage; the call asks for one output token, so the hold is about the input alone. */
  const reporting = (promptTokens: number) =>
    openai.behave({
      raw: {
        body: JSON.stringify({
          id: "c1",
          object: "chat.completion",
          created: 1,
          model: "roomy-1",
          choices: [{ index: 0, message: { role: "assistant", content: "a" }, finish_reason: "length" }],
          usage: { prompt_tokens: promptTokens, completion_tokens: 1, total_tokens: promptTokens + 1 }
        })
      }
    })

  const charged = async (content: unknown, promptTokens: number) => {
    reporting(promptTokens)
    try {
      const response = await chat({ model: "svc/roomy", max_tokens: 1, messages: [{ role: "user", content }] })
      expect(response.status).toBe(200)
      return BigInt(response.headers.get("x-svc-total-usd")!.replace(".", ""))
    } finally {
      openai.behave({})
    }
  }

  /** Nanos for that usage at 1.00 / 2.00 USD per 1M tokens. */
  const cost = (promptTokens: number) => BigInt(promptTokens) * 1000n + 2000n

  it("charges in full an image the upstream counts by its tiles", async () => {
    const content = [{ type: "text", text: "what is this?" }, { type: "image_url", image_url: { url: png } }]
    // 765 for the image's four tiles, a few for the text and the message framing.
    expect(await charged(content, 775)).toBe(cost(775))
  })

  it("charges in full audio and a file the upstream counts by their length", async () => {
    const audio = { type: "input_audio", input_audio: { data: Buffer.alloc(60_000).toString("base64"), format: "mp3" } }
    // A minute of 8 kbit/s audio; OpenAI counts ~10 tokens a second.
    expect(await charged([audio], 610)).toBe(cost(610))
    const pdf = { type: "file", file: { filename: "a.pdf", file_data: `data:application/pdf;base64,${Buffer.alloc(20_000).toString("base64")}` } }
    expect(await charged([pdf], 9_000)).toBe(cost(9_000))
  })
})

describe("bounded work before admission", () => {
  it("refuses a 5 MB prompt of one repeated character from a key with no money with 402", async () => {
    const broke = await gateway.account({ credit: "0" })
    const response = await chat({ model: "svc/vast", messages: [{ role: "user", content: "A".repeat(5_000_000) }] }, broke.key)
    expect(response.status).toBe(402)
    expect(response.body.error.code).toBe("insufficient_funds")
  }, 60_000)
})
