/**
 * Pieces of the privacy canary tests: a fake provider config with a stated
 * data policy, and the search of every text, JSON and byte column of every
 * table for a marker.
 */

/** The policy that earns the protected class: the provider keeps nothing. */
export const NO_RETENTION = { stores: false, logs: false, trains: false }

/** An `openai-compatible` provider on a fake upstream; no `privacy` means an unstated policy (standard only). */
export const fakeProvider = (
  baseUrl: string,
  id: string,
  privacy: unknown,
  deployments: ReadonlyArray<unknown>,
  extra: Record<string, unknown> = {}
) => ({
  id,
  plugin: "openai-compatible",
  baseUrl,
  ...(privacy === undefined ? {} : { privacy }),
  deployments,
  ...extra
})

type Query = <Row>(text: string, params?: ReadonlyArray<unknown>) => Promise<ReadonlyArray<Row>>

/** Every `table.column` whose value contains `marker`, and how many columns were searched. */
export const columnsHolding = async (query: Query, marker: string) => {
  const columns = await query<{ table_name: string; column_name: string; data_type: string }>(
    `SELECT table_name, column_name, data_type FROM information_schema.columns
     WHERE table_schema = 'public' AND data_type IN ('text', 'jsonb', 'json', 'character varying', 'bytea')`
  )
  const found: Array<string> = []
  for (const { column_name, data_type, table_name } of columns) {
    // bytea as text is hex: search its bytes instead.
    const holds = data_type === "bytea"
      ? `position(convert_to($1, 'UTF8') in "${column_name}") > 0`
      : `"${column_name}"::text LIKE '%' || $1 || '%'`
    const [row] = await query<{ n: number }>(`SELECT count(*)::int AS n FROM "${table_name}" WHERE ${holds}`, [marker])
    if (row!.n > 0) found.push(`${table_name}.${column_name}`)
  }
  return { searched: columns.map((column) => column.table_name), found }
}
