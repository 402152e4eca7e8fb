/**
 * The fixture of the billing test files: a fake OpenAI-compatible upstream, a
 * gateway configured against it, the upstream's behaviour reset and the money
 * invariants checked after every test, and both closed at the end.
 */
import { afterAll, afterEach, beforeAll, expect } from "vitest"
import { type FakeOpenAi, startFakeOpenAi } from "./fakeOpenAiUpstream.ts"
import { startGateway, type TestGateway } from "./gateway.ts"
import { moneyViolations } from "./invariants.ts"

export const billedSuite = (configFor: (upstreamBaseUrl: string) => unknown) => {
  const suite = {} as { upstream: FakeOpenAi; gateway: TestGateway }
  beforeAll(async () => {
    suite.upstream = await startFakeOpenAi()
    suite.gateway = await startGateway({ config: configFor(suite.upstream.baseUrl) })
  })
  afterEach(async () => {
    suite.upstream.behave({})
    expect(await moneyViolations(suite.gateway.query)).toEqual([])
  })
  afterAll(async () => {
    await suite.gateway?.close()
    await suite.upstream?.close()
  })
  return suite
}
