/**
 * Every TypeScript snippet in the README, and every curl command in it that
 * has no placeholder (`…`), runs as printed against the default install: only
 * the address is swapped for the test server's, and `SVC_KEY` /
 * `SVC_ADMIN_KEY` (or the README's `change-me`) name real keys.
 */
import { execFile } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { promisify } from "node:util"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type DefaultInstall, startDefaultInstall } from "./support/defaultInstall.ts"

const run = promisify(execFile)
const root = join(import.meta.dirname, "..")
const readme = readFileSync(join(root, "README.md"), "utf8")

const blocks = (language: string): Array<string> =>
  [...readme.matchAll(new RegExp("```" + language + "\\n([\\s\\S]*?)```", "g"))].map((match) => match[1]!)

/** Whole curl commands (with their `\` continuations) that need nothing filled in. */
const curlCommands = blocks("sh").flatMap((block) =>
  block.replace(/\\\n/g, " ").split("\n").filter((line) => /^curl /.test(line) && !line.includes("…"))
    .map((line) => line.replace(/\s+#.*$/, ""))
)

let install: DefaultInstall
let dir: string
const address = () => install.gateway.url.replace("http://", "")
const env = () => ({ ...process.env, SVC_KEY: install.key, SVC_ADMIN_KEY: install.gateway.adminKey })

beforeAll(async () => {
  install = await startDefaultInstall()
  // Inside node_modules, so the snippets' imports resolve to the project's packages.
  dir = mkdtempSync(join(root, "node_modules", ".readme-snippets-"))
})
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true })
  await install?.gateway.close()
})

describe("README snippets on the default install", () => {
  it("has snippets to run", () => {
    expect(blocks("ts").length).toBeGreaterThanOrEqual(3)
    expect(curlCommands.length).toBeGreaterThanOrEqual(1)
  })

  it.each(blocks("ts").map((code, index) => [index, code] as const))("TypeScript snippet %i runs", async (index, code) => {
    const file = join(dir, `snippet-${index}.mts`)
    writeFileSync(file, code.replaceAll("127.0.0.1:8080", address()))
    const { stdout } = await run(process.execPath, ["--import", "tsx", file], { cwd: root, env: env(), timeout: 60_000 })
    expect(stdout).not.toMatch(/error/i)
  })

  it.each(curlCommands.map((command, index) => [index, command] as const))("curl command %i runs: %s", async (_, command) => {
    const local = command.replaceAll("localhost:8080", address()).replaceAll("change-me", install.gateway.adminKey)
    const { stdout } = await run("bash", ["-c", local], { env: env(), timeout: 30_000 })
    const body = JSON.parse(stdout)
    expect(body.error).toBeUndefined()
  })
})
