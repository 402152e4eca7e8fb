/**
 * A JSON Schema as Gemini's OpenAPI-subset `Schema`, for tool parameters and
 * structured output.
 */
import { isRecord, type Json } from "../../support/json.ts"

/** Schema keywords Gemini's OpenAPI-subset `Schema` accepts as they are. */
const KEPT_SCHEMA_KEYS = new Set([
  "title",
  "description",
  "nullable",
  "enum",
  "required",
  "minItems",
  "maxItems",
  "minProperties",
  "maxProperties",
  "minLength",
  "maxLength",
  "pattern",
  "minimum",
  "maximum",
  "default",
  "example",
  "propertyOrdering"
])
/** The only string formats Gemini accepts; others are refused with a 400. */
const STRING_FORMATS = new Set(["enum", "date-time"])
/** Deeper than this a recursive `$ref` is cut off (Gemini has no references). */
const MAX_SCHEMA_DEPTH = 16

const resolveRef = (root: unknown, ref: string): unknown => {
  if (!ref.startsWith("#")) return {}
  let node: unknown = root
  for (const raw of ref.slice(1).split("/").filter(Boolean)) {
    node = isRecord(node) ? node[decodeURIComponent(raw).replace(/~1/g, "/").replace(/~0/g, "~")] : undefined
  }
  return node ?? {}
}

/** Shallow merge for `allOf`: properties and required lists are combined. */
const mergeSchemas = (a: Json, b: Json): Json => {
  const out: Json = { ...a, ...b }
  if (isRecord(a.properties) && isRecord(b.properties)) out.properties = { ...a.properties, ...b.properties }
  if (Array.isArray(a.required) && Array.isArray(b.required)) out.required = [...new Set([...a.required, ...b.required])]
  return out
}

/**
 * A JSON Schema as Gemini's schema subset: local `$ref`s inlined, `allOf`
 * merged, `oneOf` as `anyOf`, `const` as a one-value `enum`, type unions with
 * "null" as `nullable`, and every keyword Gemini rejects (`additionalProperties`,
 * `$schema`, `$defs`, `strict`, ...) dropped, recursively.
 */
export const sanitizeSchema = (schema: unknown, root: unknown = schema, depth = 0): Json => {
  if (!isRecord(schema) || depth > MAX_SCHEMA_DEPTH) return {}
  const { $ref, allOf, ...rest } = schema
  let source: Json = rest
  if (typeof $ref === "string") source = { ...sanitizeSchema(resolveRef(root, $ref), root, depth + 1), ...source }
  if (Array.isArray(allOf)) {
    source = allOf.reduce<Json>((acc, member) => mergeSchemas(acc, sanitizeSchema(member, root, depth + 1)), source)
  }
  const out: Json = {}
  for (const [key, value] of Object.entries(source)) {
    if (KEPT_SCHEMA_KEYS.has(key)) out[key] = value
    else if (key === "type") {
      const types = Array.isArray(value) ? value : [value]
      const named = types.find((type) => type !== "null")
      if (typeof named === "string") out.type = named
      if (types.includes("null")) out.nullable = true
    } else if (key === "properties" && isRecord(value)) {
      const properties = Object.entries(value).map(([name, member]) => [name, sanitizeSchema(member, root, depth + 1)])
      if (properties.length > 0) out.properties = Object.fromEntries(properties)
    } else if (key === "items" && (isRecord(value) || Array.isArray(value))) {
      // A tuple's first item schema is the closest Gemini can say.
      out.items = sanitizeSchema(Array.isArray(value) ? value[0] : value, root, depth + 1)
    } else if ((key === "anyOf" || key === "oneOf") && Array.isArray(value)) {
      out.anyOf = value.map((member) => sanitizeSchema(member, root, depth + 1))
    } else if (key === "const") out.enum = [value]
    else if (key === "format") out.format = value
  }
  if (out.type === undefined && out.properties !== undefined) out.type = "object"
  if (out.type === "string" && typeof out.format === "string" && !STRING_FORMATS.has(out.format)) delete out.format
  return out
}
