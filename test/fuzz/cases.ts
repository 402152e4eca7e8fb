/**
 * What the fuzz suite sends: every endpoint of the API with a valid request
 * as its seed, and generated cases that mutate it — fields replaced by
 * hostile values, dropped or added, whole bodies replaced by garbage, keys
 * swapped for missing, malformed, revoked or under-scoped ones, odd
 * `Idempotency-Key`s and content types, lying `content-length`s, and path
 * ids with NUL, traversal, Unicode or great length.
 */
import fc from "fast-check"
import type { RawRequest } from "./rawHttp.ts"
import { PROTO_KEYS, Raw, toJsonText, weirdString, weirdValue } from "./values.ts"

/** What the fixture made before the cases run. */
export interface Fixture {
  readonly adminKey: string
  /** Chat and monitoring scopes, with credit. */
  readonly chatKey: string
  readonly monitoringKey: string
  /** Chat scope, $0 balance. */
  readonly brokeKey: string
  readonly revokedKey: string
  readonly accountId: string
  /** A key of its own, for the revoke endpoint to revoke. */
  readonly spareKeyId: string
  readonly receiptId: string
  /** Agents scope, on the account with credit. */
  readonly agentsKey: string
  readonly agentId: string
  /** An agent of its own, for the delete endpoint to delete. */
  readonly spareAgentId: string
  /** A document of `agentId`, for the delete endpoint to delete. */
  readonly documentId: string
}

type KeyRole = "admin" | "chat" | "monitoring" | "agents" | "none"

export interface Endpoint {
  readonly name: string
  readonly method: string
  /** The route as declared in src/api (`:id`, `*`). */
  readonly route: string
  readonly key: KeyRole
  /** The valid id for the route's `:id` (`:agentId`) or `*`. */
  readonly id?: (fixture: Fixture) => string
  /** The valid id for a second path parameter (`:documentId`), which is not fuzzed. */
  readonly subId?: readonly [param: string, id: (fixture: Fixture) => string]
  /** A valid body. */
  readonly body?: (fixture: Fixture) => Record<string, unknown>
  /** Valid query parameters (list endpoints: `limit`, `cursor`). */
  readonly query?: Readonly<Record<string, string>>
  readonly idempotent?: boolean
  /** Methods never swapped in: on this path they are another endpoint that would destroy the fixture. */
  readonly keepOff?: ReadonlyArray<string>
  /** Its valid request is refused too (a capability no model has). */
  readonly refusedWhenValid?: boolean
}

const user = (content: unknown) => ({ role: "user", content })

export const ENDPOINTS: ReadonlyArray<Endpoint> = [
  {
    name: "chat", method: "POST", route: "/v1/chat/completions", key: "chat", idempotent: true,
    body: () => ({ model: "svc/swift", messages: [user("hi")], max_tokens: 8, temperature: 0.5 })
  },
  {
    name: "chat stream", method: "POST", route: "/v1/chat/completions", key: "chat", idempotent: true,
    body: () => ({ model: "auto", messages: [user("hi")], stream: true, stream_options: { include_usage: true } })
  },
  {
    name: "chat with every extension", method: "POST", route: "/v1/chat/completions", key: "chat",
    body: () => ({
      model: "svc/balanced",
      models: ["svc/pro", "svc/swift"],
      route: "fallback",
      messages: [
        { role: "system", content: "be brief" },
        user([{ type: "text", text: "look" }, { type: "image_url", image_url: { url: "https://example.com/a.png", detail: "low" } }]),
        { role: "assistant", content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "f", arguments: "{}" } }] },
        { role: "tool", tool_call_id: "c1", content: "42" }
      ],
      privacy: { class: "standard_route", allowFallbackToLowerClass: true },
      stop: ["\n"],
      seed: 7,
      user: "u1"
    })
  },
  {
    // The house models take neither tools nor schemas: this fuzzes how both are read and refused.
    // Routed to a sandbox model with tools and structured output (the house tier has neither).
    name: "chat with tools and a schema", method: "POST", route: "/v1/chat/completions", key: "chat",
    body: () => ({
      model: "auto",
      messages: [user("hi")],
      tools: [{ type: "function", function: { name: "f", parameters: { type: "object", properties: { a: { type: "string" } } } } }],
      tool_choice: { type: "function", function: { name: "f" } },
      response_format: { type: "json_schema", json_schema: { name: "out", schema: { type: "object" } } }
    })
  },
  {
    name: "responses", method: "POST", route: "/v1/responses", key: "chat", idempotent: true,
    body: () => ({
      model: "auto",
      instructions: "Be brief.",
      input: [
        { role: "user", content: [{ type: "input_text", text: "hi" }] },
        { type: "function_call", call_id: "call_1", name: "f", arguments: "{}" },
        { type: "function_call_output", call_id: "call_1", output: "done" }
      ],
      tools: [{ type: "function", name: "f", parameters: { type: "object", properties: { a: { type: "string" } } } }],
      text: { format: { type: "json_schema", name: "out", schema: { type: "object" } } },
      max_output_tokens: 50
    })
  },
  {
    name: "embeddings", method: "POST", route: "/v1/embeddings", key: "chat", idempotent: true,
    body: () => ({ model: "svc/embed", input: ["a", "b"], dimensions: 8, encoding_format: "float" })
  },
  { name: "models", method: "GET", route: "/v1/models", key: "chat" },
  { name: "model", method: "GET", route: "/v1/models/*", key: "chat", id: () => "svc/pro" },
  { name: "receipt", method: "GET", route: "/v1/receipts/:id", key: "monitoring", id: (f) => f.receiptId },
  { name: "transcript", method: "GET", route: "/v1/receipts/:id/transcript", key: "monitoring", id: (f) => f.receiptId },
  { name: "logs", method: "GET", route: "/v1/logs", key: "monitoring", query: { limit: "2", type: "payment." } },
  { name: "usage", method: "GET", route: "/v1/usage", key: "monitoring", query: { limit: "2", group_by: "model" } },
  { name: "monitoring", method: "GET", route: "/v1/monitoring", key: "monitoring", query: { window: "1h" } },
  { name: "metrics", method: "GET", route: "/metrics", key: "admin" },
  { name: "calling key", method: "GET", route: "/v1/key", key: "chat" },
  { name: "dashboard", method: "GET", route: "/dashboard", key: "none" },
  { name: "providers health", method: "GET", route: "/v1/providers/health", key: "monitoring" },
  { name: "prompt keys", method: "GET", route: "/v1/privacy/keys", key: "none" },
  { name: "openapi", method: "GET", route: "/openapi.json", key: "none" },
  { name: "liveness", method: "GET", route: "/healthz", key: "none" },
  {
    name: "create agent", method: "POST", route: "/v1/agents", key: "agents",
    body: () => ({
      name: "fuzz", instructions: "Answer from the documents.", routing: { model: "auto", privacy: { class: "standard_route" } },
      knowledge: [{ title: "Notes", text: "# Notes\n\nThe gateway bills each call." }], conversation_cap: 5
    })
  },
  { name: "list agents", method: "GET", route: "/v1/agents", key: "agents", query: { limit: "2" } },
  { name: "get agent", method: "GET", route: "/v1/agents/:id", key: "agents", id: (f) => f.agentId, keepOff: ["DELETE"] },
  { name: "delete agent", method: "DELETE", route: "/v1/agents/:id", key: "agents", id: (f) => f.spareAgentId },
  {
    name: "add document", method: "POST", route: "/v1/agents/:id/documents", key: "agents", id: (f) => f.agentId,
    body: () => ({ title: "More", text: "Receipts carry the cost of a call." })
  },
  { name: "list documents", method: "GET", route: "/v1/agents/:id/documents", key: "agents", id: (f) => f.agentId, query: { limit: "2" } },
  {
    name: "delete document", method: "DELETE", route: "/v1/agents/:id/documents/:documentId", key: "agents", id: (f) => f.agentId,
    subId: [":documentId", (f) => f.documentId]
  },
  {
    name: "agent run", method: "POST", route: "/v1/agents/runs", key: "chat", idempotent: true,
    body: (f) => ({ agent: f.agentId, input: "What does the gateway bill?", conversation_id: null })
  },
  {
    name: "legacy agent chat", method: "POST", route: "/v1/agents/:agentId/chat", key: "chat", id: (f) => f.agentId, idempotent: true,
    body: () => ({ input: "What is billed?" })
  },
  { name: "readiness", method: "GET", route: "/readyz", key: "none" },
  { name: "create account", method: "POST", route: "/v1/admin/accounts", key: "admin", body: () => ({ name: "fuzz", credit_usd: "0.5" }) },
  { name: "list accounts", method: "GET", route: "/v1/admin/accounts", key: "admin", query: { limit: "2" } },
  {
    name: "list keys", method: "GET", route: "/v1/admin/accounts/:id/keys", key: "admin", id: (f) => f.accountId,
    query: { limit: "1000" }
  },
  { name: "get account", method: "GET", route: "/v1/admin/accounts/:id", key: "admin", id: (f) => f.accountId },
  {
    name: "create key", method: "POST", route: "/v1/admin/accounts/:id/keys", key: "admin", id: (f) => f.accountId,
    body: () => ({ name: "fuzz", scopes: ["chat"], rpm: 60, tpm: 1000 })
  },
  { name: "revoke key", method: "DELETE", route: "/v1/admin/keys/:id", key: "admin", id: (f) => f.spareKeyId },
  {
    name: "set key limits", method: "PATCH", route: "/v1/admin/keys/:id", key: "admin", id: (f) => f.spareKeyId,
    body: () => ({ rpm: 600, tpm: null })
  },
  {
    name: "set account limits", method: "PATCH", route: "/v1/admin/accounts/:id/limits", key: "admin", id: (f) => f.accountId,
    body: () => ({ concurrency: 1000 })
  },
  {
    name: "add credits", method: "POST", route: "/v1/admin/accounts/:id/credits", key: "admin", id: (f) => f.accountId,
    body: () => ({ amount_usd: "0.01", reference: "fuzz" })
  }
]

/** One generated request, and the long strings in it (no message may quote more than a prefix of them). */
export interface FuzzCase {
  readonly label: string
  readonly endpoint: Endpoint
  readonly request: RawRequest
  readonly sent: ReadonlyArray<string>
}

/** `arbitrary` once in `every` cases, else null. */
const sometimes = <A>(arbitrary: fc.Arbitrary<A>, every: number): fc.Arbitrary<A | null> =>
  fc.oneof({ weight: every - 1, arbitrary: fc.constant(null) }, { weight: 1, arbitrary })

const keyFor = (role: KeyRole, fixture: Fixture) =>
  role === "none" ? undefined : ({ admin: fixture.adminKey, chat: fixture.chatKey, monitoring: fixture.monitoringKey, agents: fixture.agentsKey })[role]

type AuthChoice =
  | { kind: "right" }
  | { kind: "other"; role: "admin" | "chat" | "monitoring" | "agents" | "broke" | "revoked" }
  | { kind: "header"; value: string | null }

const authArb: fc.Arbitrary<AuthChoice> = fc.oneof(
  { weight: 12, arbitrary: fc.constant({ kind: "right" as const }) },
  { weight: 2, arbitrary: fc.constantFrom("admin", "chat", "monitoring", "agents", "broke", "revoked").map((role) => ({ kind: "other" as const, role })) },
  {
    weight: 2,
    arbitrary: fc.oneof(
      fc.constant(null),
      fc.constantFrom("Bearer", "Bearer ", "bearer svc_live_x", "Basic dXNlcjpwYXNz", "Bearer  a  b", "svc_live_abc", "Bearer \u00ff\u00fe"),
      fc.string({ maxLength: 60 }).map((s) => `Bearer ${s}`),
      fc.integer({ min: 100, max: 12_000 }).map((n) => `Bearer svc_live_${"A".repeat(n)}`),
      fc.constantFrom("Bearer a\u0000b", "Bearer a\u0007b", "Bearer a\rb")
    ).map((value) => ({ kind: "header" as const, value }))
  }
)

const authHeader = (choice: AuthChoice, role: KeyRole, fixture: Fixture): string | null => {
  if (choice.kind === "header") return choice.value
  const key = choice.kind === "right"
    ? keyFor(role, fixture)
    : ({
      admin: fixture.adminKey,
      chat: fixture.chatKey,
      monitoring: fixture.monitoringKey,
      agents: fixture.agentsKey,
      broke: fixture.brokeKey,
      revoked: fixture.revokedKey
    })[choice.role]
  return key === undefined ? null : `Bearer ${key}`
}

/** A string as one path segment (percent-encoding cannot carry half a surrogate pair). */
const segment = (text: string) => encodeURIComponent(text.replace(/[\ud800-\udfff]/g, "?"))

const idArb = fc.oneof(
  { weight: 4, arbitrary: fc.constant<string | null>(null) },
  { weight: 3, arbitrary: weirdString.map(segment) },
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      "%00", "acct_%00", "rcpt_x%00y", "%ZZ", "%E0%A4%A", "%ED%A0%80", "..%2F..%2Fadmin", "../admin/accounts", "svc%2Fpro",
      "%F0%9F%98%80", "a%20b", "", "acct_nope", "key_nope", "rcpt_nope", "svc/pro/extra", "svc/embed", "x".repeat(5000)
    )
  }
)

type BodyEdit =
  | { op: "set"; at: number; value: unknown }
  | { op: "drop"; at: number }
  | { op: "add"; at: number; key: string; value: unknown }

const editArb: fc.Arbitrary<BodyEdit> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ op: fc.constant("set" as const), at: fc.nat(), value: weirdValue }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant("drop" as const), at: fc.nat() }) },
  {
    weight: 2,
    arbitrary: fc.record({ op: fc.constant("add" as const), at: fc.nat(), key: fc.oneof(fc.constantFrom(...PROTO_KEYS), weirdString), value: weirdValue })
  }
)

/** The containers of a body and their fields, in a fixed order (index `at` picks one). */
const slotsOf = (root: unknown) => {
  const slots: Array<{ parent: any; key: string | number }> = []
  const visit = (node: unknown) => {
    if (node === null || typeof node !== "object" || node instanceof Raw) return
    for (const key of Array.isArray(node) ? node.keys() : Object.keys(node)) {
      slots.push({ parent: node, key })
      visit((node as any)[key])
    }
  }
  visit(root)
  return slots
}

const containersOf = (root: unknown) => {
  const out: Array<any> = [root]
  for (const { parent, key } of slotsOf(root)) {
    if (parent[key] !== null && typeof parent[key] === "object" && !(parent[key] instanceof Raw)) out.push(parent[key])
  }
  return out
}

/** A fresh copy of a generated value: generated objects are shared between cases and must not be edited in place. */
const copy = (value: unknown): unknown => {
  if (value instanceof Raw || value === null || typeof value !== "object") return value
  if (Array.isArray(value)) return value.map(copy)
  const out: Record<string, unknown> = {}
  for (const key of Object.keys(value)) {
    Object.defineProperty(out, key, { value: copy((value as any)[key]), enumerable: true, writable: true, configurable: true })
  }
  return out
}

const applyEdit = (body: Record<string, unknown>, generated: BodyEdit) => {
  const edit = "value" in generated ? { ...generated, value: copy(generated.value) } : generated
  if (edit.op === "add") {
    const containers = containersOf(body)
    const target = containers[edit.at % containers.length]
    if (Array.isArray(target)) target.push(edit.value)
    else Object.defineProperty(target, edit.key, { value: edit.value, enumerable: true, writable: true, configurable: true })
    return
  }
  const slots = slotsOf(body)
  if (slots.length === 0) return
  const { parent, key } = slots[edit.at % slots.length]!
  if (edit.op === "set") parent[key] = edit.value
  else if (Array.isArray(parent)) parent.splice(key as number, 1)
  else delete parent[key]
}

const GARBAGE = ["", "null", "[]", "{}", "1e999", "\"str\"", "{\"model\":", "{'a':1}", "{\"a\":1,}", "\u0000", "[".repeat(50_000), "{\"a\":\"\\ud800\"}", "\ufeff{}"]

const bodyArb = fc.oneof(
  { weight: 10, arbitrary: fc.array(editArb, { minLength: 0, maxLength: 3 }).map((edits) => ({ kind: "edits" as const, edits })) },
  { weight: 1, arbitrary: fc.oneof(fc.constantFrom(...GARBAGE), fc.string({ maxLength: 200 }), fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify(v))).map((text) => ({ kind: "text" as const, text })) }
)

const headersArb = fc.record({
  idempotencyKey: sometimes(
    fc.oneof(fc.string({ minLength: 1, maxLength: 40 }), fc.constantFrom("", " ", "k\u00e9", "k\u0001", "k\u0000"), fc.integer({ min: 200, max: 12_000 }).map((n) => "k".repeat(n))),
    3
  ),
  contentType: sometimes(fc.constantFrom("text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/json; charset=latin1", "application/xml", "", "application/json\u0000"), 8),
  lengthLie: sometimes(fc.oneof(fc.integer({ min: -5, max: 5 }), fc.constantFrom(-1, 2 ** 53, 30 * 1024 * 1024)), 12),
  extra: sometimes(fc.tuple(fc.constantFrom("x-forwarded-for", "transfer-encoding", "expect", "x-request-id", "accept-encoding"), fc.constantFrom("chunked", "100-continue", "gzip", "1.2.3.4", "req_fake", "\u00ff")), 10)
})

const methodArb = sometimes(fc.constantFrom("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "TRACE", "FOO"), 15)

/** A list's query: its valid parameters, sometimes with one set to a hostile value (a cursor not given out, a limit out of range). */
const queryArb = sometimes(
  fc.record({
    name: fc.constantFrom("limit", "cursor", "cursor", "limit[]", "__proto__"),
    value: fc.oneof(
      weirdString,
      fc.constantFrom("0", "1001", "-1", "1.5", "1e3", "", "null", "MTox", "MTphY2N0Xw", "OTk5OTk5OTk5OTk5OTk5OTk5OjE", "%ZZ")
    )
  }),
  2
)

const queryText = (valid: Readonly<Record<string, string>>, edit: { name: string; value: string } | null) => {
  const params = { ...valid, ...(edit === null ? {} : { [edit.name]: edit.value }) }
  const text = Object.entries(params).map(([name, value]) =>
    `${encodeURIComponent(name)}=${value === "%ZZ" ? value : encodeURIComponent(value.replace(/[\ud800-\udfff]/g, "?"))}`
  ).join("&")
  return text === "" ? "" : `?${text}`
}

/** A generated request against one of `ENDPOINTS` (or an unknown route), made concrete with the fixture. */
export const caseArb = (fixture: () => Fixture): fc.Arbitrary<FuzzCase> =>
  fc.record({
    endpoint: fc.constantFrom(...ENDPOINTS),
    method: methodArb,
    auth: authArb,
    id: idArb,
    body: bodyArb,
    headers: headersArb,
    query: queryArb,
    stray: sometimes(fc.oneof(weirdString.map(segment), fc.constantFrom("/v1/", "/v2/chat/completions", "//v1/models", "/v1/models/", "/v1/admin/accounts//keys", "/%2e%2e/%2e%2e/etc/passwd")), 20)
  }).map(({ endpoint, method, auth, id, body, headers, query, stray }) => {
    const f = fixture()
    const sent: Array<string> = []
    const idText = id ?? (endpoint.id === undefined ? "" : encodeURIComponent(endpoint.id(f)).replaceAll("%2F", "/"))
    if (id !== null) sent.push(decodeURIComponentSafe(id))
    const path = stray !== null
      ? (stray.startsWith("/") ? stray : `/v1/${stray}`)
      : endpoint.route.replace(/:(id|agentId)\b/, idText).replace("*", idText)
        .replace(endpoint.subId?.[0] ?? "\u0000", endpoint.subId?.[1](f) ?? "") +
        (endpoint.query === undefined ? "" : queryText(endpoint.query, query))
    if (endpoint.query !== undefined && query !== null) sent.push(query.value)
    let text: string | undefined
    if (endpoint.body !== undefined) {
      if (body.kind === "text") text = body.text
      else {
        const value = endpoint.body(f)
        for (const edit of body.edits) applyEdit(value, edit)
        text = toJsonText(value)
        collectStrings(body.edits, sent)
      }
    }
    const pairs: Array<[string, string]> = []
    const authorization = authHeader(auth, endpoint.key, f)
    if (authorization !== null) pairs.push(["authorization", authorization])
    if (authorization !== null && authorization.length > 64) sent.push(authorization)
    if (text !== undefined) pairs.push(["content-type", headers.contentType ?? "application/json"])
    if (endpoint.idempotent === true && headers.idempotencyKey !== null) {
      pairs.push(["idempotency-key", headers.idempotencyKey])
      sent.push(headers.idempotencyKey)
    }
    if (headers.extra !== null) pairs.push(headers.extra)
    const length = text === undefined ? undefined : Buffer.byteLength(text)
    const label = `${endpoint.name}${stray === null ? "" : " (stray path)"}`
    return {
      label,
      // How fast-check prints a counterexample: the request, not the endpoint's functions.
      [fc.toStringMethod]: () => `${label}: ${method ?? endpoint.method} ${path.slice(0, 200)} ${JSON.stringify(pairs).slice(0, 300)} ${text?.slice(0, 300) ?? ""}`,
      endpoint,
      sent: sent.filter((s) => s.length > 64),
      request: {
        method: method === null || endpoint.keepOff?.includes(method) ? endpoint.method : method,
        path,
        headers: pairs,
        body: text,
        contentLength: headers.lengthLie === null || length === undefined ? length : Math.max(0, length + headers.lengthLie)
      }
    }
  })

const decodeURIComponentSafe = (text: string) => {
  try {
    return decodeURIComponent(text)
  } catch {
    return text
  }
}

const collectStrings = (value: unknown, out: Array<string>) => {
  if (typeof value === "string") out.push(value)
  else if (Array.isArray(value)) for (const item of value) collectStrings(item, out)
  else if (value !== null && typeof value === "object") for (const [key, item] of Object.entries(value)) (out.push(key), collectStrings(item, out))
}
