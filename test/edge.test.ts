/** The edge's mapping of failures that are not ours into the caller's errors; defects never leak. */
import { Cause, Effect, Logger, LogLevel } from "effect"
import { describe, expect, it } from "vitest"
import { SqlError } from "@effect/sql/SqlError"
import { makeDatabaseStatus } from "../layers/storage/DatabaseStatusLive.ts"
import { codeOf, InternalError, NotFound, PayloadTooLarge, ServiceUnavailable, UpstreamError } from "../services/ApiError.ts"
import { toApiError } from "../src/http/Edge.ts"

const map = (cause: Cause.Cause<unknown>) =>
  Effect.runPromise(toApiError(1024)(cause).pipe(Logger.withMinimumLogLevel(LogLevel.None)))

describe("edge error mapping", () => {
  it("turns a defect into a 500 that says nothing about it", async () => {
    const error = await map(Cause.die(new Error("secret stack detail at /srv/app.ts:12")))
    expect(error).toBeInstanceOf(InternalError)
    expect(codeOf(error)).toBe("internal_error")
    expect(error.message).not.toContain("secret")
  })

  it("keeps our own errors as they are", async () => {
    const upstream = new UpstreamError({ message: "x" })
    expect(await map(Cause.fail(upstream))).toBe(upstream)
    const notFound = new NotFound({ message: "y" })
    expect(await map(Cause.die(notFound))).toBe(notFound)
  })

  it("maps an interrupted or empty cause to a 500 as well", async () => {
    expect(await map(Cause.empty)).toBeInstanceOf(InternalError)
  })

  it("maps a body over the limit to 413", async () => {
    const { RequestError } = await import("@effect/platform/HttpServerError")
    const request = { method: "POST", url: "/v1/chat/completions" } as any
    const error = await map(Cause.die(new RequestError({ request, reason: "Decode", cause: new Error("maxBytes exceeded") })))
    expect(error).toBeInstanceOf(PayloadTooLarge)
  })

  it("maps a database outage to 503 with Retry-After (one of ours still wins); another SQL fault stays a 500", async () => {
    const sqlFault = (code: string) => new SqlError({ message: "Failed", cause: Object.assign(new Error(code), { code }) })
    const mapped = (cause: Cause.Cause<unknown>) =>
      Effect.runPromise(Effect.scoped(Effect.flatMap(
        makeDatabaseStatus(Effect.never, { probeIntervalMs: 60_000, retryAfterSeconds: 4 }),
        (database) => toApiError(1024, database)(cause)
      )).pipe(Logger.withMinimumLogLevel(LogLevel.None)))
    const outage = await mapped(Cause.die(sqlFault("ECONNREFUSED")))
    expect(outage).toBeInstanceOf(ServiceUnavailable)
    expect(codeOf(outage)).toBe("service_unavailable")
    expect((outage as ServiceUnavailable).retryAfterSeconds).toBe(4)
    const upstream = new UpstreamError({ message: "x" })
    expect(await mapped(Cause.sequential(Cause.fail(upstream), Cause.die(sqlFault("57P01"))))).toBe(upstream)
    expect(await mapped(Cause.die(sqlFault("23505")))).toBeInstanceOf(InternalError)
  })
})
