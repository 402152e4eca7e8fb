/**
 * A deterministic JSON value that validates against a JSON Schema, for the
 * common subset models are asked for (types, properties, enum/const,
 * combinators, local $refs, length/size/range bounds, a few formats).
 * `pattern`, `not` and conditionals are not understood.
 */
type Obj = Record<string, unknown>

/** Past this depth objects get only required properties and arrays only minItems, so recursive schemas end. */
const SHALLOW_DEPTH = 8
const GIVE_UP_DEPTH = 64
const MAX_HOPS = 64

const FORMATS: Record<string, (variant: number) => string> = {
  "date-time": (n) => `2024-01-${pad2(1 + (n % 28))}T00:00:00Z`,
  date: (n) => `2024-01-${pad2(1 + (n % 28))}`,
  time: (n) => `00:00:${pad2(n % 60)}Z`,
  email: (n) => `user${n || ""}@example.com`,
  uri: (n) => `https://example.com/${n || ""}`,
  url: (n) => `https://example.com/${n || ""}`,
  "uri-reference": (n) => `/${n || ""}`,
  hostname: (n) => `host${n || ""}.example.com`,
  ipv4: (n) => `192.0.2.${n % 256}`,
  ipv6: (n) => `2001:db8::${(n % 65535).toString(16)}`,
  uuid: (n) => `00000000-0000-4000-8000-${n.toString(16).padStart(12, "0").slice(-12)}`
}

export const jsonSchemaSample = (schema: unknown): unknown => sample(schema, { root: schema, depth: 0, variant: 0 })

interface Context {
  readonly root: unknown
  readonly depth: number
  /** Which of several equal-shaped siblings this is, so `uniqueItems` arrays get distinct items. */
  readonly variant: number
}

const sample = (schema: unknown, ctx: Context): unknown => {
  if (ctx.depth > GIVE_UP_DEPTH) return null
  const s = flatten(schema, ctx.root, ctx.depth >= SHALLOW_DEPTH, 0)
  if ("const" in s) return s.const
  if (Array.isArray(s.enum) && s.enum.length > 0) return s.enum[ctx.variant % s.enum.length]
  switch (typeOf(s)) {
    case "object":
      return objectSample(s, ctx)
    case "array":
      return arraySample(s, ctx)
    case "integer":
      return numberSample(s, true, ctx.variant)
    case "number":
      return numberSample(s, false, ctx.variant)
    case "boolean":
      return ctx.variant % 2 === 0
    case "null":
      return null
    default:
      return stringSample(s, ctx.variant)
  }
}

/** Resolves $ref and merges allOf and the chosen anyOf/oneOf branch into one plain schema. */
const flatten = (schema: unknown, root: unknown, shallow: boolean, hops: number): Obj => {
  if (!isObj(schema) || hops > MAX_HOPS) return {}
  const { $ref, allOf, anyOf, oneOf, ...rest } = schema
  const inner = (member: unknown) => flatten(member, root, shallow, hops + 1)
  let out: Obj = rest
  if (typeof $ref === "string") out = merge(inner(resolveRef(root, $ref)), out)
  if (Array.isArray(allOf)) out = allOf.reduce<Obj>((acc, member) => merge(acc, inner(member)), out)
  for (const choices of [anyOf, oneOf]) {
    if (Array.isArray(choices) && choices.length > 0) out = merge(out, inner(pickChoice(choices, shallow)))
  }
  return out
}

/** The first branch; deep inside a recursive schema, the first that does not recurse. */
const pickChoice = (choices: ReadonlyArray<unknown>, shallow: boolean): unknown => {
  const usable = choices.filter((choice) => choice !== false)
  const plain = shallow ? usable.find((choice) => !JSON.stringify(choice).includes('"$ref"')) : undefined
  return plain ?? usable[0]
}

const resolveRef = (root: unknown, ref: string): unknown => {
  if (!ref.startsWith("#")) return {}
  const path = ref.length <= 2 ? [] : ref.slice(2).split("/")
  let node: unknown = root
  for (const raw of path) {
    const key = decodeURIComponent(raw).replace(/~1/g, "/").replace(/~0/g, "~")
    node = isObj(node) ? node[key] : undefined
  }
  return node ?? {}
}

const LOWER_BOUNDS = ["minimum", "minLength", "minItems", "minProperties"]
const UPPER_BOUNDS = ["maximum", "maxLength", "maxItems", "maxProperties"]

/** Both schemas at once, as far as sampling needs. */
const merge = (a: Obj, b: Obj): Obj => {
  const out: Obj = { ...a, ...b }
  for (const key of LOWER_BOUNDS) if (isNum(a[key]) && isNum(b[key])) out[key] = Math.max(a[key], b[key])
  for (const key of UPPER_BOUNDS) if (isNum(a[key]) && isNum(b[key])) out[key] = Math.min(a[key], b[key])
  if (isObj(a.properties) && isObj(b.properties)) {
    const properties: Obj = { ...a.properties }
    for (const [key, value] of Object.entries(b.properties)) {
      properties[key] = key in properties ? { allOf: [properties[key], value] } : value
    }
    out.properties = properties
  }
  if (Array.isArray(a.required) && Array.isArray(b.required)) {
    out.required = [...new Set([...a.required, ...b.required])]
  }
  if (a.type !== undefined && b.type !== undefined) out.type = intersectTypes(asArray(a.type), asArray(b.type))
  if (Array.isArray(a.enum) && Array.isArray(b.enum)) {
    const other = b.enum.map((value) => JSON.stringify(value))
    out.enum = a.enum.filter((value) => other.includes(JSON.stringify(value)))
  }
  if (a.additionalProperties === false || b.additionalProperties === false) out.additionalProperties = false
  return out
}

/** Types both allow; every integer is a number. */
const intersectTypes = (a: ReadonlyArray<unknown>, b: ReadonlyArray<unknown>): ReadonlyArray<unknown> =>
  a.flatMap((type) => {
    if (b.includes(type)) return [type]
    const numeric = (type === "integer" && b.includes("number")) || (type === "number" && b.includes("integer"))
    return numeric ? ["integer"] : []
  })

const typeOf = (s: Obj): string => {
  const declared = asArray(s.type).filter((type): type is string => typeof type === "string")
  if (declared.length > 0) return declared.find((type) => type !== "null") ?? "null"
  if ("properties" in s || "required" in s || "additionalProperties" in s) return "object"
  if ("items" in s || "prefixItems" in s || "minItems" in s || "maxItems" in s) return "array"
  if ("minimum" in s || "maximum" in s || "multipleOf" in s || "exclusiveMinimum" in s || "exclusiveMaximum" in s) {
    return "number"
  }
  return "string"
}

const objectSample = (s: Obj, ctx: Context): Obj => {
  const properties = isObj(s.properties) ? s.properties : {}
  const required = asArray(s.required).filter((key): key is string => typeof key === "string")
  const shallow = ctx.depth >= SHALLOW_DEPTH
  const optional = shallow ? [] : Object.keys(properties).filter((key) => properties[key] !== false)
  const { additionalProperties } = s
  const extra = additionalProperties === false ? undefined : isObj(additionalProperties) ? additionalProperties : {}
  const keys = [...new Set([...required, ...optional])]
  for (let i = 0; extra !== undefined && isNum(s.minProperties) && keys.length < s.minProperties; i++) {
    if (!keys.includes(`extra_${i}`)) keys.push(`extra_${i}`)
  }
  const out: Obj = {}
  for (const key of keys) {
    out[key] = sample(key in properties ? properties[key] : extra ?? {}, { ...ctx, depth: ctx.depth + 1 })
  }
  return out
}

const arraySample = (s: Obj, ctx: Context): Array<unknown> => {
  const prefix = Array.isArray(s.prefixItems) ? s.prefixItems : Array.isArray(s.items) ? s.items : []
  const rest = Array.isArray(s.prefixItems) ? s.items : Array.isArray(s.items) ? s.additionalItems : s.items
  const min = isNum(s.minItems) ? s.minItems : 0
  const max = isNum(s.maxItems) ? s.maxItems : Infinity
  const wanted = ctx.depth >= SHALLOW_DEPTH ? min : Math.max(min, prefix.length, 1)
  const count = Math.min(wanted, max, rest === false ? prefix.length : Infinity)
  return Array.from({ length: count }, (_, i) =>
    sample(i < prefix.length ? prefix[i] : rest, { root: ctx.root, depth: ctx.depth + 1, variant: i })
  )
}

const stringSample = (s: Obj, variant: number): string => {
  const format = typeof s.format === "string" ? FORMATS[s.format] : undefined
  if (format) return format(variant)
  const base = variant === 0 ? "sample" : `sample${variant}`
  const min = isNum(s.minLength) ? s.minLength : 0
  const max = isNum(s.maxLength) ? s.maxLength : Infinity
  const padded = base.length < min ? base + "x".repeat(min - base.length) : base
  return [...padded].slice(0, max).join("")
}

const numberSample = (s: Obj, integer: boolean, variant: number): number => {
  // Draft 4 spells exclusive bounds as booleans beside minimum/maximum; later drafts as numbers.
  const low = isNum(s.exclusiveMinimum) ? { value: s.exclusiveMinimum, open: true }
    : isNum(s.minimum) ? { value: s.minimum, open: s.exclusiveMinimum === true } : undefined
  const high = isNum(s.exclusiveMaximum) ? { value: s.exclusiveMaximum, open: true }
    : isNum(s.maximum) ? { value: s.maximum, open: s.exclusiveMaximum === true } : undefined
  const fits = (x: number) =>
    (!low || (low.open ? x > low.value : x >= low.value)) && (!high || (high.open ? x < high.value : x <= high.value))
  const step = isNum(s.multipleOf) && s.multipleOf > 0 ? s.multipleOf : integer ? 1 : undefined
  const first = step === undefined ? continuousStart(low, high, fits) : steppedStart(low, high, step, fits)
  const next = first + variant * (step ?? 1)
  return fits(next) ? tidy(next) : tidy(first)
}

type Bound = { readonly value: number; readonly open: boolean } | undefined

const continuousStart = (low: Bound, high: Bound, fits: (x: number) => boolean): number => {
  if (fits(0)) return 0
  if (low && fits(low.value)) return low.value
  if (low && high) return (low.value + high.value) / 2
  if (low) return low.value + 1
  return high ? (high.open ? high.value - 1 : high.value) : 0
}

const steppedStart = (low: Bound, high: Bound, step: number, fits: (x: number) => boolean): number => {
  if (fits(0)) return 0
  if (low) {
    const k = Math.ceil(low.value / step)
    return fits(tidy(k * step)) ? tidy(k * step) : tidy((k + 1) * step)
  }
  const k = Math.floor((high?.value ?? 0) / step)
  return fits(tidy(k * step)) ? tidy(k * step) : tidy((k - 1) * step)
}

/** Drops floating-point noise such as 0.30000000000000004. */
const tidy = (x: number): number => Number(x.toPrecision(12))

const pad2 = (n: number) => String(n).padStart(2, "0")
const asArray = (value: unknown): ReadonlyArray<unknown> =>
  Array.isArray(value) ? value : value === undefined ? [] : [value]
const isObj = (value: unknown): value is Obj => typeof value === "object" && value !== null && !Array.isArray(value)
const isNum = (value: unknown): value is number => typeof value === "number" && Number.isFinite(value)
