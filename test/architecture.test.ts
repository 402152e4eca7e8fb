/**
 * The house rules that keep the architecture readable, checked on the source
 * tree: imports point one way (src → layers, plugins → services) with no
 * cycles, plugins never reach into layers, no file of ours over 300 lines,
 * time read through Effect's Clock, error codes spelled in one place, and
 * test layer blocks that leave other tests alone.
 */
import { readdirSync, readFileSync, statSync } from "node:fs"
import { dirname, join, relative, resolve } from "node:path"
import { describe, expect, it } from "vitest"

const ROOT = resolve(import.meta.dirname, "..")
const FOLDERS = ["services", "layers", "plugins", "src"] as const

const sourceFiles = (folder: string): Array<string> =>
  readdirSync(join(ROOT, folder)).flatMap((name) => {
    const path = join(folder, name)
    if (statSync(join(ROOT, path)).isDirectory()) return sourceFiles(path)
    return path.endsWith(".ts") ? [path] : []
  })

const files = FOLDERS.flatMap(sourceFiles)
const text = new Map(files.map((file) => [file, readFileSync(join(ROOT, file), "utf8")]))

/** Our own modules a file imports (type-only imports included: they couple as much). */
const importsOf = (file: string): Array<string> =>
  [...text.get(file)!.matchAll(/(?:from|import)\s*\(?\s*["'](\.{1,2}\/[^"']+)["']/g)].map((match) =>
    relative(ROOT, resolve(dirname(join(ROOT, file)), match[1]!))
  )

const layer = (file: string) => file.split("/")[0]!
const allowed: Record<string, ReadonlyArray<string>> = {
  services: ["services"],
  layers: ["services", "layers", "plugins"],
  plugins: ["services", "plugins"],
  src: ["services", "layers", "plugins", "src"]
}

describe("architecture", () => {
  it("imports point one way: services import only services; plugins never reach into layers", () => {
    const upward = files.flatMap((file) =>
      importsOf(file).filter((target) => !allowed[layer(file)]!.includes(layer(target))).map((target) => `${file} → ${target}`)
    )
    expect(upward).toEqual([])
  })

  it("has no circular imports", () => {
    const cycles: Array<string> = []
    const state = new Map<string, "visiting" | "done">()
    const path: Array<string> = []
    const visit = (file: string) => {
      if (state.get(file) === "done") return
      if (state.get(file) === "visiting") {
        cycles.push([...path.slice(path.indexOf(file)), file].join(" → "))
        return
      }
      state.set(file, "visiting")
      path.push(file)
      for (const target of importsOf(file)) if (text.has(target)) visit(target)
      path.pop()
      state.set(file, "done")
    }
    files.forEach(visit)
    expect(cycles).toEqual([])
  })

  it("keeps every file to at most 300 lines (migrations aside)", () => {
    const long = files
      .filter((file) => !file.includes("/migrations/"))
      .map((file) => [file, text.get(file)!.split("\n").length] as const)
      .filter(([, lines]) => lines > 300)
    expect(long).toEqual([])
  })

  it("reads time through Clock outside the HTTP edge", () => {
    expect(files.filter((file) => !file.startsWith("src/") && text.get(file)!.includes("Date.now()"))).toEqual([])
  })

  it("spells each error code only where the facts are declared", () => {
    const codes = [...text.get("services/ApiError.ts")!.matchAll(/code: "([a-z_]+)"/g)].map((match) => match[1]!)
    expect(codes.length).toBeGreaterThan(10)
    const elsewhere = files.filter((file) => file !== "services/ApiError.ts").flatMap((file) =>
      codes.filter((code) => text.get(file)!.includes(`"${code}"`)).map((code) => `${code} in ${file}`)
    )
    expect(elsewhere).toEqual([])
  })

  it("has tests take layer blocks from test/support/layer.ts, which leaves Vitest's shared it alone", () => {
    const tests = sourceFiles("test").filter((file) => file !== "test/support/layer.ts")
    const direct = tests.filter((file) =>
      /import\s*\{[^}]*\blayer\b[^}]*\}\s*from\s*"@effect\/vitest"/.test(readFileSync(join(ROOT, file), "utf8"))
    )
    expect(tests.length).toBeGreaterThan(50)
    expect(direct).toEqual([])
  })
})
