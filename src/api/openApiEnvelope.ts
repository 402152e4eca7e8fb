/**
 * Fixes two places where the generated OpenAPI document would not say what
 * the server does: HttpApi declares its own `HttpApiDecodeError` body on every
 * endpoint, but the edge turns every decode failure into our error envelope;
 * and the catalogue route is a wildcard (ids contain a slash) that reads
 * better as `/v1/models/{id}`.
 */
const DECODE_ERROR_REF = "#/components/schemas/HttpApiDecodeError"

const isDecodeErrorRef = (node: unknown) =>
  typeof node === "object" && node !== null && (node as { $ref?: unknown }).$ref === DECODE_ERROR_REF

const prune = (node: unknown): unknown => {
  if (Array.isArray(node)) return node.map(prune)
  if (typeof node !== "object" || node === null) return node
  const out: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(node)) {
    if (key === "anyOf" && Array.isArray(value)) {
      const kept = value.filter((member) => !isDecodeErrorRef(member)).map(prune)
      if (kept.length === 1) Object.assign(out, kept[0])
      else out[key] = kept
    } else {
      out[key] = prune(value)
    }
  }
  return out
}

const DECODE_ERROR_DESCRIPTION = "The request did not match the expected schema"

const renameWildcard = (paths: Record<string, any>) => {
  const wildcard = paths["/v1/models/*"]
  if (wildcard === undefined) return paths
  const { ["/v1/models/*"]: _, ...rest } = paths
  const text = JSON.stringify(wildcard).replace("\"name\":\"*\"", "\"name\":\"id\"")
  return { ...rest, "/v1/models/{id}": JSON.parse(text) }
}

export const documentAsServed = (spec: Record<string, any>): Record<string, any> => {
  const text = JSON.stringify(prune(spec)).replaceAll(DECODE_ERROR_DESCRIPTION, "The request is invalid")
  const pruned = JSON.parse(text) as Record<string, any>
  pruned.paths = renameWildcard(pruned.paths ?? {})
  const schemas = pruned.components?.schemas as Record<string, unknown> | undefined
  if (schemas !== undefined) {
    for (const name of ["HttpApiDecodeError", "Issue", "PropertyKey"]) delete schemas[name]
  }
  return pruned
}
