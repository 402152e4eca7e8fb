/**
 * HttpApi declares its own `HttpApiDecodeError` body on every endpoint, but the
 * edge turns every decode failure into our error envelope. This OpenAPI
 * transform removes that body so the document shows what is really sent.
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

export const withoutDefaultDecodeError = (spec: Record<string, any>): Record<string, any> => {
  const pruned = prune(spec) as Record<string, any>
  const schemas = pruned.components?.schemas as Record<string, unknown> | undefined
  if (schemas !== undefined) {
    for (const name of ["HttpApiDecodeError", "Issue", "PropertyKey"]) delete schemas[name]
  }
  return pruned
}
