/**
 * A request's count as the chat lane makes it after a JSON answer
 * (src/http/callRecording.ts `countIn`): given the fiber it runs a step of,
 * the request line goes to the sink and the call record is kept when called,
 * an answer already known (services/atOnce.ts), with no step of its own.
 */
import { Effect, Option } from "effect"
import { describe, expect, it } from "vitest"
import { openCall } from "../src/http/callRecording.ts"
import { type RequestLine, requestLineSink } from "../src/http/requestLine.ts"
import { isAnswered } from "../services/atOnce.ts"
import type { CallStats, FinishedCall } from "../services/CallStats.ts"

describe("a JSON answer's count", () => {
  it("is done when called, in the step of the fiber it is given: the line written, the call recorded", () => {
    const recorded: Array<FinishedCall> = []
    const lines: Array<RequestLine> = []
    // A call record kept in memory when called, as CallStatsPg keeps it.
    const stats = { record: (call: FinishedCall) => (recorded.push(call), Effect.void) } as unknown as CallStats["Type"]
    const clock = Effect.runSync(Effect.clock)
    const call = openCall(stats, Option.none(), "req_1", clock)
    call.facts.accountId = "acct_1"
    const counted = Effect.runSync(
      Effect.withFiberRuntime((fiber) => {
        const count = call.countIn(fiber, "POST", "/v1/chat/completions", 200, undefined)
        return Effect.succeed({ atOnce: isAnswered(count), lines: lines.length, recorded: recorded.length })
      }).pipe(Effect.locally(requestLineSink, (line) => void lines.push(line)))
    )
    expect(counted).toEqual({ atOnce: true, lines: 1, recorded: 1 })
    expect(lines[0]!.fields).toMatchObject({ request_id: "req_1", account_id: "acct_1", status: 200 })
    expect(recorded[0]).toMatchObject({ requestId: "req_1", accountId: "acct_1", endpoint: "/v1/chat/completions", status: 200 })
  })
})
