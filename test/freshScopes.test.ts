/**
 * The chat lane's fresh scopes (src/http/lane/freshScopes.ts): each call gets
 * a scope of its own, open and empty, batch after batch.
 */
import { Effect, Exit, Scope } from "effect"
import { describe, expect, it } from "vitest"
import { freshScopes } from "../src/http/lane/freshScopes.ts"

describe("fresh scopes", () => {
  it("hands out a distinct open scope per call, past the end of a batch, each closing with what was put on it", () => {
    const next = freshScopes()
    const scopes = Array.from({ length: 200 }, next)
    expect(new Set(scopes).size).toBe(200)
    const closed: Array<number> = []
    Effect.runSync(Effect.forEach(scopes, (scope, i) => Scope.addFinalizer(scope, Effect.sync(() => void closed.push(i)))))
    // Nothing ran before its own scope closed: no scope was handed out closed, or twice.
    expect(closed).toEqual([])
    Effect.runSync(Effect.forEach(scopes, (scope) => Scope.close(scope, Exit.void)))
    expect(closed).toEqual(scopes.map((_, i) => i))
  })
})
