/**
 * Module hooks that run the bench's TypeScript as the shipped build does
 * (scripts/build.mjs): esbuild strips the types, and nothing else is added.
 * tsx, which loaded the bench's processes until session 24, compiles with
 * esbuild's `keepNames`: every named function and class made at run time
 * goes through `__name`, an `Object.defineProperty` call, so a closure made
 * per call costs the bench's gateway what the shipped one never pays (~4% of
 * its CPU on streamed calls, docs/performance.md). Our imports name their
 * files with their `.ts` extension, so Node's own resolution serves.
 */
import { readFile } from "node:fs/promises"
import { fileURLToPath } from "node:url"
import { transform } from "esbuild"

export const load = async (url, context, nextLoad) => {
  if (!url.startsWith("file:") || !url.endsWith(".ts")) return nextLoad(url, context)
  const path = fileURLToPath(url)
  const { code } = await transform(await readFile(path, "utf8"), {
    loader: "ts",
    format: "esm",
    target: "node20",
    sourcefile: path,
    sourcemap: "inline",
    // As tsconfig.json says (class fields as ES2022 defines them).
    tsconfigRaw: { compilerOptions: { target: "ES2022", verbatimModuleSyntax: false } }
  })
  return { format: "module", source: code, shortCircuit: true }
}
