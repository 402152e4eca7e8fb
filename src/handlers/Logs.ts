/** `GET /v1/logs`: a page of the selected account's events as wire records. */
import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { EventLog, type StoredEvent } from "../../services/EventLog.ts"
import { DEFAULT_PAGE_SIZE } from "../../services/Pagination.ts"
import { Api } from "../api/Api.ts"
import { listRecord } from "../api/Lists.ts"
import type { EventRecord } from "../api/LogsGroup.ts"
import { eventCursorOf } from "../api/monitoringParams.ts"
import { CurrentPrincipal } from "../api/Security.ts"
import { selectAccount } from "./accountSelector.ts"

const toEventRecord = (event: StoredEvent): typeof EventRecord.Type => ({
  id: event.id,
  object: "event",
  type: event.type,
  created_at: event.createdAt.toISOString(),
  account_id: event.accountId ?? "",
  ...(event.requestId !== undefined ? { request_id: event.requestId } : {}),
  ...(event.receiptId !== undefined ? { receipt_id: event.receiptId } : {}),
  data: event.data
})

export const LogsHandlers = HttpApiBuilder.group(Api, "logs", (handlers) =>
  Effect.gen(function*() {
    const log = yield* EventLog
    return handlers.handle("listEvents", ({ urlParams }) =>
      Effect.gen(function*() {
        const accountId = yield* selectAccount(yield* CurrentPrincipal, urlParams.accountId)
        const page = yield* log.list({
          accountId,
          type: urlParams.type,
          receiptId: urlParams.receiptId,
          from: urlParams.from,
          to: urlParams.to,
          limit: urlParams.limit ?? DEFAULT_PAGE_SIZE,
          after: urlParams.cursor
        })
        return listRecord({ items: page.items.map(toEventRecord), next: page.next }, eventCursorOf)
      }))
  }))
