/**
 * A span for one stage of a call (`svc.admission`, `svc.route_plan`,
 * `svc.billing.hold`, `svc.upstream`, `svc.billing.settle`), exported with
 * traces (TracingLive). It takes no stack trace: Effect's default captures one
 * per span as the stage is built, on every call whether traces are exported
 * or not, and the stage's name already says where it is.
 */
import { Effect } from "effect"

export const stageSpan = (name: string, attributes?: Record<string, unknown>) =>
  Effect.withSpan(name, attributes === undefined ? { captureStackTrace: false } : { attributes, captureStackTrace: false })
