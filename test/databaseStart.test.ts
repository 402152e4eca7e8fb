/**
 * Start-up against a database that is not there: an unreachable server is
 * waited for, one log line per retry, up to `database.startupWaitSeconds`,
 * then the start stops with main's one line; a refusal that is a config
 * mistake (an unknown database) stops it at once, without retrying.
 */
import { createServer } from "node:net"
import { Effect, Layer, Logger } from "effect"
import { describe, expect, it } from "vitest"
import { DatabaseLive } from "../layers/storage/Database.ts"
import { startFailureLine } from "../src/start/failureLines.ts"
import { testConfig } from "./support/testConfig.ts"

/** A loopback port nobody listens on. */
const closedPort = () =>
  new Promise<number>((resolve) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number }
      server.close(() => resolve(port))
    })
  })

/** Builds the database layer for `url`; main's line (or "started") and the lines logged meanwhile. */
const start = async (url: string, startupWaitSeconds: number) => {
  const lines: Array<string> = []
  const logger = Logger.make(({ message }) => void lines.push(String(Array.isArray(message) ? message[0] : message)))
  const outcome = await Effect.runPromise(
    Effect.scoped(Layer.build(DatabaseLive.pipe(Layer.provide(testConfig({ database: { startupWaitSeconds } }, { DATABASE_URL: url }))))).pipe(
      Effect.as("started"),
      Effect.catchTag("DatabaseNotReady", (error) => Effect.succeed(startFailureLine(error))),
      Effect.provide(Logger.replace(Logger.defaultLogger, logger))
    )
  )
  return { outcome, lines }
}

describe("starting without a database", () => {
  it("waits for an unreachable server with one line per retry, then stops with one line", async () => {
    const { lines, outcome } = await start(`postgres://postgres@127.0.0.1:${await closedPort()}/test`, 1)
    expect(outcome).toMatch(/^svc: cannot use the database at DATABASE_URL: .*ECONNREFUSED.*; still unreachable after \d+ s$/)
    expect(lines[0]).toBe("connecting to the PostgreSQL database at DATABASE_URL")
    expect(lines.length).toBeGreaterThanOrEqual(3)
    for (const line of lines.slice(1)) expect(line).toMatch(/^database not reachable \(.*ECONNREFUSED.*\); retry \d+ in [\d.]+ s$/)
  }, 30_000)

  it.skipIf(!process.env.DATABASE_URL)("stops at once, without retrying, on an unknown database (PostgreSQL server runs only)", async () => {
    const url = new URL(process.env.DATABASE_URL!)
    url.pathname = "/svc_no_such_database"
    const { lines, outcome } = await start(url.toString(), 0)
    expect(outcome).toMatch(/^svc: cannot use the database at DATABASE_URL: .*svc_no_such_database.*does not exist$/)
    expect(lines).toEqual(["connecting to the PostgreSQL database at DATABASE_URL"])
  }, 30_000)
})
