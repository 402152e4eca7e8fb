/**
 * A fresh database per test gateway: a new PostgreSQL database when
 * `DATABASE_URL` is set (dropped afterwards), else a copy of the migrated
 * embedded template that the global setup made (cheaper than a cold start),
 * or, outside vitest (a bench such as `BENCH_ONLY=stages`), an empty
 * directory the gateway migrates as it starts.
 */
import { cpSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { randomBytes } from "node:crypto"
import pg from "pg"

export interface TestDatabase {
  /** Environment entries that point the gateway at this database. */
  readonly env: Record<string, string>
  readonly drop: () => Promise<void>
}

/** Where the global setup left the migrated embedded template for this test run. */
export const TEMPLATE_ENV = "SVC_TEST_PGLITE_TEMPLATE"

const onServer = async <A>(url: string, run: (client: pg.Client) => Promise<A>) => {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    return await run(client)
  } finally {
    await client.end()
  }
}

export const freshDatabase = async (): Promise<TestDatabase> => {
  const serverUrl = process.env.DATABASE_URL
  if (serverUrl !== undefined && serverUrl !== "") {
    const name = `svc_test_${randomBytes(6).toString("hex")}`
    await onServer(serverUrl, (client) => client.query(`CREATE DATABASE ${name}`))
    const url = new URL(serverUrl)
    url.pathname = `/${name}`
    return {
      env: { DATABASE_URL: url.toString() },
      drop: () => onServer(serverUrl, (client) => client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).then(() => {})
    }
  }
  const dataDir = mkdtempSync(join(tmpdir(), "svc-test-db-"))
  const template = process.env[TEMPLATE_ENV]
  if (template !== undefined) cpSync(template, dataDir, { recursive: true })
  return {
    env: { SVC_DATA_DIR: dataDir, DATABASE_URL: "" },
    drop: async () => rmSync(dataDir, { recursive: true, force: true })
  }
}
