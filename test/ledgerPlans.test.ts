/**
 * The ledger's hot statements on a fresh database: the plan PostgreSQL keeps
 * for a prepared statement (a generic plan, made from the statistics of a
 * small table) must find the reservations it closes by primary key. A plan
 * that read an index of open reservations, or of an account's reservations,
 * got slower with every call an account ever made.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { SETTLE } from "../layers/billing/ledgerSettle.ts"
import { TURN } from "../layers/billing/ledgerTurn.ts"
import { startGateway, type TestGateway } from "./support/gateway.ts"

let gateway: TestGateway
beforeAll(async () => {
  gateway = await startGateway()
})
afterAll(() => gateway?.close())

/** The generic plan of `statement` (parameters of `types`), as EXPLAIN prints it. */
const genericPlan = (statement: string, types: ReadonlyArray<string>, values: ReadonlyArray<string>) =>
  gateway.run(Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql.withTransaction(Effect.gen(function*() {
      yield* sql.unsafe("SET LOCAL plan_cache_mode = force_generic_plan")
      yield* sql.unsafe(`PREPARE ledger_plan(${types.join(", ")}) AS ${statement}`)
      const rows = yield* sql.unsafe<{ "QUERY PLAN": string }>(`EXPLAIN EXECUTE ledger_plan(${values.join(", ")})`)
      yield* sql.unsafe("DEALLOCATE ledger_plan")
      return rows.map((row) => row["QUERY PLAN"]).join("\n")
    }))))

/** The plan's lines that read the reservations table. */
const reservationReads = (plan: string) =>
  plan.split("\n").filter((line) => /\bon reservations(_pkey|_open_expiry)?\b|Scan on reservations/.test(line)).join("\n")

describe("ledger plans on a fresh database", () => {
  it("a settlement closes its reservations by primary key", async () => {
    const plan = await genericPlan(SETTLE, ["jsonb", "text"], ["'[]'", "'acct_x'"])
    expect(reservationReads(plan)).toContain("reservations_pkey")
    expect(plan).not.toContain("reservations_open_expiry")
    expect(plan).not.toMatch(/Seq Scan on reservations/)
  })

  it("a settlement of calls held from leases does not read reservations to close", async () => {
    // A hot account's calls are held from its lease: none has an open reservation, so the
    // closing step must be skipped whole, not run as a scan that finds nothing.
    for (const [statement, types, values] of [
      [SETTLE, ["jsonb", "text"], ["'[]'", "'acct_x'"]],
      [TURN, ["jsonb", "text", "int", "jsonb"], ["'[]'", "'acct_x'", "60", "'[]'"]]
    ] as const) {
      const plan = await genericPlan(statement, types, values)
      const closing = plan.slice(plan.indexOf("CTE closed"), plan.indexOf("CTE carved"))
      expect(closing).toMatch(/One-Time Filter[\s\S]*on reservations/)
    }
  })

  it("a turn that settles and reserves closes its reservations by primary key", async () => {
    const plan = await genericPlan(TURN, ["jsonb", "text", "int", "jsonb"], ["'[]'", "'acct_x'", "60", "'[]'"])
    expect(reservationReads(plan)).toContain("reservations_pkey")
    expect(plan).not.toContain("reservations_open_expiry")
    expect(plan).not.toMatch(/Seq Scan on reservations/)
  })
})
