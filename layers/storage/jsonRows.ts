/**
 * Rows sent to a statement in one JSON parameter: an array with one array per
 * row, each field in its place, rather than an object per row. PostgreSQL
 * parses and sorts every object's keys, then looks each column up by name;
 * by place it does neither, and the keys are not sent (docs/performance.md,
 * item 80). A JSON null reads as SQL's NULL.
 */

/** A field of such a row: its column name and SQL type. */
export type JsonField = readonly [name: string, type: string]

/** The rows of parameter `param` (e.g. `$1`), each field read by its place, with `ord` each row's place from 1. */
export const jsonRows = (param: string, fields: ReadonlyArray<JsonField>) => `
    SELECT ord::int, ${
  fields.map(([name, type], i) =>
    type === "jsonb" ? `nullif(item -> ${i}, 'null') AS ${name}` : `(item ->> ${i})::${type} AS ${name}`
  ).join(", ")
}
    FROM jsonb_array_elements(${param}::jsonb) WITH ORDINALITY AS element(item, ord)`
