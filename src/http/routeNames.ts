/**
 * The route a request path belongs to, as the API declares it
 * (`/v1/receipts/:id`), for metric labels: a bounded set, whatever paths
 * callers send (any other path is `unmatched`).
 */
import { HttpApi } from "@effect/platform"
import { Api } from "../api/Api.ts"

/** Served beside the API's own endpoints. */
const EXTRA_ROUTES = ["/openapi.json", "/dashboard", "/dashboard/:file"]

const matcherOf = (template: string) =>
  new RegExp(
    "^" +
      template.split("/").map((segment) =>
        segment.startsWith(":") ? "[^/]+" : segment === "*" ? ".+" : segment.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")
      ).join("/") +
      "$"
  )

const templates: Array<string> = [...EXTRA_ROUTES]
HttpApi.reflect(Api, {
  onGroup: () => {},
  onEndpoint: ({ endpoint }) => {
    if (!templates.includes(endpoint.path)) templates.push(endpoint.path)
  }
})
// Literal routes before ones with parameters, so `/v1/agents/runs` is not read as `/v1/agents/:id`.
const routes = templates
  .sort((a, b) => Number(a.includes(":") || a.includes("*")) - Number(b.includes(":") || b.includes("*")))
  .map((template) => ({ template, matcher: matcherOf(template) }))

export const routeOf = (url: string): string => {
  const query = url.indexOf("?")
  const path = query < 0 ? url : url.slice(0, query)
  return routes.find((route) => route.matcher.test(path))?.template ?? "unmatched"
}
