/** What of an upstream's error object reaches the operators' log: identifiers only, never text that could echo a prompt. */
import { describe, expect, it } from "vitest"
import { errorKindOf } from "../plugins/support/json.ts"

describe("errorKindOf", () => {
  it("keeps type, code and status when they are identifiers", () => {
    expect(errorKindOf({ type: "invalid_request_error", code: "context_length_exceeded", status: 400, message: "x" }))
      .toBe("type=invalid_request_error code=context_length_exceeded status=400")
  })

  it("drops the message, and any field holding free text, however it is labelled", () => {
    const echoed = "Cannot process: please repeat my secret"
    expect(errorKindOf({ message: echoed })).toBe("unspecified")
    expect(errorKindOf({ type: echoed, code: "rate_limited" })).toBe("code=rate_limited")
    expect(errorKindOf({ type: "x".repeat(65) })).toBe("unspecified")
    expect(errorKindOf({ type: { nested: echoed } })).toBe("unspecified")
    expect(errorKindOf("not an object")).toBe("unspecified")
  })
})
