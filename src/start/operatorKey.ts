/**
 * The operator key at start. With `SVC_ADMIN_KEY` set there is nothing to
 * do. Without it, the first start of a database generates an operator key,
 * stores its hash and prints it once (on stdout, not through the logger, so
 * it does not travel into log pipelines); later starts print one line saying
 * how to get a new one. Of several processes starting together on one
 * PostgreSQL database exactly one prints the key (services/ApiKeys.ts).
 */
import { Console, Effect, Option } from "effect"
import { ApiKeys } from "../../services/ApiKeys.ts"
import { AppConfig } from "../../services/Config.ts"

/** How an operator gets a new key; the same words in the notice and the README. */
export const ROTATE_HINT = "`npm run svc -- admin-key rotate` prints a new one (the old stops working)"

export const announceOperatorKey = Effect.gen(function*() {
  const { adminKey } = yield* AppConfig
  if (adminKey !== undefined) return
  const issued = yield* (yield* ApiKeys).issueOperatorKey("first")
  if (Option.isNone(issued)) {
    return yield* Effect.logInfo(`admin API: use the operator key printed on first start, or set SVC_ADMIN_KEY; ${ROTATE_HINT}`)
  }
  yield* Console.log(
    [
      "",
      "svc: no SVC_ADMIN_KEY is set, so this first start made an operator key for the admin API.",
      "It is shown only now (only its hash is stored):",
      "",
      `    ${issued.value}`,
      "",
      `Send it as \`Authorization: Bearer <key>\` to /v1/admin/*. Lost it? ${ROTATE_HINT}.`,
      ""
    ].join("\n")
  )
})
