/**
 * Upstream usage judged before billing (layers/billing/usageCheck.ts), and
 * what each provider plugin passes on: a usage not given is "none" (the
 * gateway counts then), a figure given but not a number is NaN, so billing
 * sees it as the fault it is; and what the ledger refuses to write
 * (layers/billing/billCheck.ts).
 */
import { describe, expect, it } from "vitest"
import { billProblem } from "../layers/billing/billCheck.ts"
import { billableUsage, MAX_TOKEN_COUNT, usageCeiling, usageProblem } from "../layers/billing/usageCheck.ts"
import { usageOf as anthropicUsage } from "../plugins/providers/anthropic/response.ts"
import { usageOf as geminiUsage } from "../plugins/providers/gemini/response.ts"
import { usageOf as openAiUsage } from "../plugins/providers/openaiCompatible/response.ts"
import { billFor } from "./support/ledgerContract.ts"

const held = { inputTokens: 100, outputTokens: 900 }

describe("usage check", () => {
  it("the ceiling is twice the larger of the context and the tokens held, never past the integer columns", () => {
    expect(usageCeiling(8000, held)).toBe(16_000)
    expect(usageCeiling(10, { inputTokens: 5000, outputTokens: 0 })).toBe(10_000)
    expect(usageCeiling(2_000_000_000, held)).toBe(MAX_TOKEN_COUNT)
  })

  it("passes non-negative integers up to the ceiling, above the hold too", () => {
    expect(usageProblem({ inputTokens: 0, outputTokens: 0 }, 100)).toBeUndefined()
    expect(usageProblem({ inputTokens: 100, outputTokens: 100 }, 100)).toBeUndefined()
    expect(billableUsage({ inputTokens: 120, outputTokens: 5000 }, held, 8000, "svc/m")).toEqual({
      usage: { inputTokens: 120, outputTokens: 5000 }
    })
  })

  it.each([
    [{ inputTokens: -1, outputTokens: 10 }, "input tokens are negative"],
    [{ inputTokens: 10, outputTokens: -7 }, "output tokens are negative"],
    [{ inputTokens: 10, outputTokens: 2 ** 31 }, "output tokens exceed 16000"],
    [{ inputTokens: 1e300, outputTokens: 1 }, "input tokens exceed 16000"],
    [{ inputTokens: Number.NaN, outputTokens: 1 }, "input tokens are not an integer"],
    [{ inputTokens: 1, outputTokens: 2.5 }, "output tokens are not an integer"],
    [{ inputTokens: Number.POSITIVE_INFINITY, outputTokens: 1 }, "input tokens are not an integer"],
    [{ inputTokens: 16_001, outputTokens: 1 }, "input tokens exceed 16000"]
  ])("bills %o as the usage held, with the event that says why", (reported, problem) => {
    const { invalid, usage } = billableUsage(reported, held, 8000, "svc/m")
    expect(usage).toEqual(held)
    expect(invalid).toEqual({
      type: "provider.usage_invalid",
      data: {
        model: "svc/m",
        problem,
        reported_input_tokens: String(reported.inputTokens),
        reported_output_tokens: String(reported.outputTokens),
        billed_input_tokens: 100,
        billed_output_tokens: 900
      }
    })
  })
})

describe("plugins pass usage on as reported", () => {
  it("openai-compatible: none when neither figure is given; a malformed or missing figure is NaN", () => {
    expect(openAiUsage(undefined)).toBeUndefined()
    expect(openAiUsage(null)).toBeUndefined()
    expect(openAiUsage({ prompt_tokens: null })).toBeUndefined()
    expect(openAiUsage({ prompt_tokens: 3, completion_tokens: 4 })).toEqual({ prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 })
    expect(openAiUsage({ prompt_tokens: -3, completion_tokens: 4 })).toMatchObject({ prompt_tokens: -3 })
    expect(openAiUsage({ prompt_tokens: 1.5, completion_tokens: "4" })).toMatchObject({ prompt_tokens: 1.5, completion_tokens: Number.NaN })
    expect(openAiUsage({ prompt_tokens: 3 })).toMatchObject({ prompt_tokens: 3, completion_tokens: Number.NaN })
  })

  it("anthropic: cache figures are input; a malformed figure is NaN", () => {
    expect(anthropicUsage({})).toBeUndefined()
    expect(anthropicUsage({ input_tokens: 3, output_tokens: 4, cache_read_input_tokens: 10 })).toMatchObject({
      prompt_tokens: 13,
      completion_tokens: 4
    })
    expect(anthropicUsage({ input_tokens: 3, output_tokens: "x" })).toMatchObject({ completion_tokens: Number.NaN })
    expect(anthropicUsage({ input_tokens: 3, output_tokens: 4, cache_read_input_tokens: "x" })).toMatchObject({
      prompt_tokens: Number.NaN
    })
  })

  it("gemini: output figures may be absent (zero); a malformed figure is NaN", () => {
    expect(geminiUsage({ candidatesTokenCount: 4 })).toBeUndefined()
    expect(geminiUsage({ promptTokenCount: 3 })).toMatchObject({ prompt_tokens: 3, completion_tokens: 0 })
    expect(geminiUsage({ promptTokenCount: 3, candidatesTokenCount: 4, thoughtsTokenCount: 2 })).toMatchObject({ completion_tokens: 6 })
    expect(geminiUsage({ promptTokenCount: 3, candidatesTokenCount: [] })).toMatchObject({ completion_tokens: Number.NaN })
  })
})

describe("bill check", () => {
  it("the ledger refuses token figures outside its columns and amounts out of range", () => {
    expect(billProblem(billFor("0.1"))).toBeUndefined()
    expect(billProblem({ ...billFor("0.1"), usage: { inputTokens: -1, outputTokens: 0 } })).toMatch(/input tokens -1/)
    expect(billProblem({ ...billFor("0.1"), usage: { inputTokens: 0, outputTokens: 2 ** 31 } })).toMatch(/output tokens/)
    expect(billProblem({ ...billFor("0.1"), usage: { inputTokens: 0.5, outputTokens: 0 } })).toMatch(/input tokens/)
    const negative = billFor("0.1")
    expect(billProblem({ ...negative, cost: { ...negative.cost, total: -1n } })).toMatch(/total -1/)
    expect(billProblem({ ...negative, cost: { ...negative.cost, upstream: 10n ** 38n } })).toMatch(/upstream cost/)
  })
})
