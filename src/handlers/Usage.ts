/** `GET /v1/usage`: the selected account's usage report as its wire record. */
import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { formatUsd } from "../../services/Money.ts"
import { DEFAULT_PAGE_SIZE } from "../../services/Pagination.ts"
import { Usage, type UsageFigures } from "../../services/Usage.ts"
import { Api } from "../api/Api.ts"
import { CurrentPrincipal } from "../api/Security.ts"
import { usageCursorOf } from "../api/UsageGroup.ts"
import { selectAccount } from "./accountSelector.ts"

const figures = (of: UsageFigures) => ({
  requests: of.requests,
  input_tokens: of.inputTokens,
  output_tokens: of.outputTokens,
  spend_usd: formatUsd(of.spend)
})

export const UsageHandlers = HttpApiBuilder.group(Api, "usage", (handlers) =>
  Effect.gen(function*() {
    const usage = yield* Usage
    return handlers.handle("getUsage", ({ urlParams }) =>
      Effect.gen(function*() {
        const accountId = yield* selectAccount(yield* CurrentPrincipal, urlParams.accountId)
        const report = yield* usage.report({
          accountId,
          from: urlParams.from,
          to: urlParams.to,
          groupBy: urlParams.group_by,
          limit: urlParams.limit ?? DEFAULT_PAGE_SIZE,
          after: urlParams.cursor
        })
        return {
          object: "usage" as const,
          from: urlParams.from?.toISOString() ?? null,
          to: urlParams.to?.toISOString() ?? null,
          totals: report.totals === undefined ? null : {
            ...figures(report.totals),
            by_privacy_class: report.totals.byPrivacyClass.map((row) => ({ privacy_class: row.privacyClass, ...figures(row) }))
          },
          groups: report.groups?.map((row) => ({ group: row.group, ...figures(row) })) ?? null,
          data: report.calls.map((call) => ({
            receipt_id: call.receiptId,
            request_id: call.requestId,
            key_id: call.keyId ?? null,
            created_at: call.createdAt.toISOString(),
            endpoint: call.endpoint,
            model: call.model,
            privacy_class: call.privacyClass,
            input_tokens: call.inputTokens,
            output_tokens: call.outputTokens,
            cost_usd: formatUsd(call.cost)
          })),
          next_cursor: report.next === null ? null : usageCursorOf(report.next),
          has_more: report.next !== null
        }
      }))
  }))
