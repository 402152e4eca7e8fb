/**
 * Log lines are written together: one write per turn of the event loop,
 * whatever is left at exit written then (src/start/logFormat.ts).
 */
import { describe, expect, it } from "vitest"
import { lineBuffer } from "../src/start/logFormat.ts"

const nextTurn = () => new Promise((resolve) => setImmediate(resolve))

describe("log lines", () => {
  it("are written once per turn of the event loop, in order, together", async () => {
    const writes: Array<string> = []
    const line = lineBuffer((text) => writes.push(text), () => {})
    line("one")
    line("two")
    expect(writes).toEqual([])
    await nextTurn()
    expect(writes).toEqual(["one\ntwo"])
    line("three")
    await nextTurn()
    expect(writes).toEqual(["one\ntwo", "three"])
    await nextTurn()
    expect(writes).toHaveLength(2)
  })

  it("still pending when the process exits are written then", () => {
    const writes: Array<string> = []
    let exit = () => {}
    const line = lineBuffer((text) => writes.push(text), (flush) => void (exit = flush))
    line("a start-up failure's last lines")
    exit()
    expect(writes).toEqual(["a start-up failure's last lines"])
  })
})
