/**
 * `/dashboard`: the page, its script and styles (built into dist/dashboard by
 * scripts/build.mjs), served by the gateway itself with a strict
 * Content-Security-Policy — everything from this origin, no inline script or
 * style, no frames, no third-party request. The page reads the public API
 * with the key the user pastes; it has no way in of its own.
 */
import { existsSync, readFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { HttpApiBuilder, HttpRouter, HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"

const CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'self' data:",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'"
].join("; ")

const HEADERS = {
  "content-security-policy": CSP,
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "cache-control": "no-cache"
}

/** The files the page is made of, and their types. */
const FILES: Record<string, string> = {
  "index.html": "text/html; charset=utf-8",
  "app.js": "text/javascript; charset=utf-8",
  "style.css": "text/css; charset=utf-8",
  "uplot.min.css": "text/css; charset=utf-8"
}

/** dist/dashboard next to the bundle (dist/main.js), or from the sources (src/http) when run with tsx. */
const directory = () => {
  const here = dirname(fileURLToPath(import.meta.url))
  return [join(here, "dashboard"), join(here, "..", "..", "dist", "dashboard")].find((dir) => existsSync(join(dir, "index.html")))
}

export const DashboardLive = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function*() {
    const dir = directory()
    const files = new Map(
      dir === undefined ? [] : Object.keys(FILES).map((name) => [name, readFileSync(join(dir, name))] as const)
    )
    const serve = (name: string) =>
      Effect.sync(() => {
        const body = files.get(name)
        if (body === undefined) {
          return HttpServerResponse.text(
            dir === undefined ? "The dashboard is not built: run `npm run build`." : "No such file.",
            { status: 404, headers: HEADERS }
          )
        }
        return HttpServerResponse.uint8Array(body, { contentType: FILES[name]!, headers: HEADERS })
      })
    yield* router.get("/dashboard", serve("index.html"))
    yield* router.get(
      "/dashboard/:file",
      Effect.flatMap(HttpRouter.params, (params) => serve(Object.hasOwn(FILES, params.file ?? "") ? params.file! : ""))
    )
  })
)
