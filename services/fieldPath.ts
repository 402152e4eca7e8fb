/** Names a field from a Schema issue path the way callers write it: `providers[0].baseUrl`. */
export const fieldPath = (path: ReadonlyArray<PropertyKey>): string =>
  path.reduce<string>(
    (out, key) => typeof key === "number" ? `${out}[${key}]` : out === "" ? String(key) : `${out}.${String(key)}`,
    ""
  )

/** A field inside `base`: `routing.modes.fast` + `maxP95Ratio` → `routing.modes.fast.maxP95Ratio`; an index or an empty field joins without a dot. */
export const fieldIn = (base: string, field: string): string =>
  field === "" || field.startsWith("[") ? base + field : `${base}.${field}`
