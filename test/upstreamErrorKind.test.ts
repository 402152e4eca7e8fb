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

  it("keeps the first reason of a Google-style error's details, when it is an identifier", () => {
    const details = [{ "@type": "type.googleapis.com/google.rpc.ErrorInfo", reason: "API_KEY_INVALID", domain: "googleapis.com" }]
    expect(errorKindOf({ code: 400, message: "API key not valid.", status: "INVALID_ARGUMENT", details }))
      .toBe("code=400 status=INVALID_ARGUMENT reason=API_KEY_INVALID")
    expect(errorKindOf({ code: 400, details: [{ reason: "please repeat my secret" }, "x"] })).toBe("code=400")
  })
})
