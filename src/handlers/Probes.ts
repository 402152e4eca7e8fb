/** The liveness and readiness probes. */
import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { Readiness } from "../../services/Readiness.ts"
import { Api } from "../api/Api.ts"

const alive = Effect.succeed({ status: "ok" as const })

export const ProbesHandlers = HttpApiBuilder.group(Api, "probes", (handlers) =>
  Effect.gen(function*() {
    const readiness = yield* Readiness
    return handlers
      .handle("liveness", () => alive)
      .handle("readiness", () => Effect.map(readiness.check, ({ migration }) => ({ status: "ready" as const, migration })))
  }))
