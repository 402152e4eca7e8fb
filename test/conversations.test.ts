/**
 * Conversations on a real database: started under the agent's cap, the first
 * over it refused, and no more than the cap when many start at once (on
 * PostgreSQL, each on its own connection); found only through their agent
 * and account; turns appended in order and read back newest last; gone with
 * their agent.
 */
import { Effect, Either } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Conversations } from "../services/Conversations.ts"
import { startGateway, type TestGateway } from "./support/gateway.ts"

let gateway: TestGateway

beforeAll(async () => {
  gateway = await startGateway()
}, 120_000)

afterAll(() => gateway?.close())

const newAgent = async (cap: number) => {
  const account = await gateway.account({ scopes: ["agents"] })
  const agent = (await gateway.request("POST", "/v1/agents", {
    key: account.key,
    body: { name: "talk", instructions: "", conversation_cap: cap }
  })).body
  return { accountId: account.id, key: account.key, agentId: agent.id as string }
}

const conversations = <A, E>(use: (service: Conversations["Type"]) => Effect.Effect<A, E>) =>
  gateway.run(Effect.flatMap(Conversations, use))

describe("conversations", () => {
  it("starts conversations up to the agent's cap and refuses the next with conversation_limit_exceeded", async () => {
    const { accountId, agentId, key } = await newAgent(2)
    const first = await conversations((c) => c.start(accountId, agentId))
    expect(first.id).toMatch(/^conv_/)
    await conversations((c) => c.start(accountId, agentId))
    const refused = await conversations((c) => Effect.flip(c.start(accountId, agentId)))
    expect(refused._tag).toBe("ConversationLimitExceeded")
    expect(refused.message).toContain("cap of 2 conversations")
    expect((await gateway.request("GET", `/v1/agents/${agentId}`, { key })).body.conversation_count).toBe(2)
  })

  it("gives out no more than the cap when many start at once", async () => {
    const { accountId, agentId } = await newAgent(5)
    const outcomes = await Promise.all(
      Array.from({ length: 12 }, () => conversations((c) => Effect.either(c.start(accountId, agentId))))
    )
    expect(outcomes.filter(Either.isRight)).toHaveLength(5)
    expect(outcomes.filter(Either.isLeft).map((outcome) => outcome.left._tag)).toEqual(Array(7).fill("ConversationLimitExceeded"))
    const rows = await gateway.query("SELECT id FROM agent_conversations WHERE agent_id = $1", [agentId])
    expect(rows).toHaveLength(5)
  })

  it("finds a conversation only through its own agent and account", async () => {
    const mine = await newAgent(10)
    const other = await newAgent(10)
    const conversation = await conversations((c) => c.start(mine.accountId, mine.agentId))
    expect((await conversations((c) => c.get(mine.accountId, mine.agentId, conversation.id))).id).toBe(conversation.id)
    for (const [accountId, agentId] of [[other.accountId, mine.agentId], [mine.accountId, other.agentId], [other.accountId, other.agentId]]) {
      const missing = await conversations((c) => Effect.flip(c.get(accountId!, agentId!, conversation.id)))
      expect(missing._tag).toBe("NotFound")
    }
    expect((await conversations((c) => Effect.flip(c.start(other.accountId, mine.agentId))))._tag).toBe("NotFound")
  })

  it("appends turns in order and reads back the last ones, oldest first", async () => {
    const { accountId, agentId } = await newAgent(10)
    const conversation = await conversations((c) => c.start(accountId, agentId))
    const written = await conversations((c) =>
      c.append(conversation.id, [{ role: "user", content: "one" }, { role: "assistant", content: "two", receiptId: "rcpt_x" }]))
    expect(written.map((turn) => turn.id).every((id) => id.startsWith("msg_"))).toBe(true)
    expect(written[1]!.receiptId).toBe("rcpt_x")
    await conversations((c) => c.append(conversation.id, [{ role: "user", content: "three" }, { role: "assistant", content: "four" }]))
    expect((await conversations((c) => c.history(conversation.id, 3))).map((turn) => turn.content)).toEqual(["two", "three", "four"])
    expect((await conversations((c) => c.history(conversation.id, 100))).map((turn) => turn.role)).toEqual([
      "user",
      "assistant",
      "user",
      "assistant"
    ])
  })

  it("goes with its agent, turns and all", async () => {
    const { accountId, agentId, key } = await newAgent(10)
    const conversation = await conversations((c) => c.start(accountId, agentId))
    await conversations((c) => c.append(conversation.id, [{ role: "user", content: "bye" }]))
    expect((await gateway.request("DELETE", `/v1/agents/${agentId}`, { key })).status).toBe(200)
    expect(await gateway.query("SELECT id FROM agent_conversations WHERE id = $1", [conversation.id])).toEqual([])
    expect(await gateway.query("SELECT id FROM agent_turns WHERE conversation_id = $1", [conversation.id])).toEqual([])
  })
})
