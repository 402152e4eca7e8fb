/**
 * Rows sent by place in one JSON parameter (layers/storage/jsonRows.ts), as the
 * settlement and call-record statements send them, read by the database the
 * gateway runs on: each field cast to its type, a JSON null read as SQL's NULL
 * (a jsonb field too, not the JSON value `null`), and each row's place.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { jsonRows } from "../layers/storage/jsonRows.ts"
import { startGateway, type TestGateway } from "./support/gateway.ts"

describe("rows sent by place", () => {
  let gateway: TestGateway
  beforeAll(async () => {
    gateway = await startGateway()
  })
  afterAll(() => gateway?.close())

  const FIELDS = [["id", "text"], ["tokens", "int"], ["price", "numeric"], ["at", "timestamptz"], ["events", "jsonb"]] as const

  it("reads each field by its place, typed, with JSON null as NULL and the rows' order", async () => {
    const rows = await gateway.query<Record<string, unknown>>(
      `SELECT ord, id, tokens + 1 AS tokens, (price * 2)::text AS price, extract(epoch FROM at)::int AS at,
              events, events IS NULL AS no_events
       FROM (${jsonRows("$1", FIELDS)}) input ORDER BY ord`,
      [JSON.stringify([
        ["rcpt_a", 41, "0.000000001", "2026-11-29T00:00:00.000Z", [{ type: "provider.route", data: { attempt: 1 } }]],
        [null, null, null, null, null]
      ])]
    )
    expect(rows).toEqual([
      {
        ord: 1,
        id: "rcpt_a",
        tokens: 42,
        price: "0.000000002",
        at: 1795910400,
        events: [{ type: "provider.route", data: { attempt: 1 } }],
        no_events: false
      },
      { ord: 2, id: null, tokens: null, price: null, at: null, events: null, no_events: true }
    ])
  })
})
