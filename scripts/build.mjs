/**
 * `npm run build` (also run by `npm install` through `prepare`): bundles the
 * server and the operator CLI into plain JavaScript under dist/, so they
 * start with `node` alone, without compiling TypeScript on every run.
 * `--if-stale` (before `npm start` and `npm run svc`) builds only when a
 * source file is newer than the bundle, so an edited checkout never runs old
 * code and an unchanged one starts at once. It also makes the sandbox's word
 * vectors (scripts/wordVectors.mjs) when they are missing, and the dashboard
 * (src/dashboard: the browser bundle with its chart library, the page and its
 * styles) into dist/dashboard, which the gateway serves at /dashboard.
 */
import { build } from "esbuild"
import { chmodSync, copyFileSync, existsSync, mkdirSync, readdirSync, statSync } from "node:fs"
import { join } from "node:path"
import { buildWordVectors, WORD_VECTORS } from "./wordVectors.mjs"

const entries = { main: "src/main.ts", cli: "src/cli.ts" }
const sources = ["src", "layers", "services", "plugins", "package.json", "scripts/build.mjs"]

const newest = (path) => {
  const stat = statSync(path)
  if (!stat.isDirectory()) return stat.mtimeMs
  return Math.max(0, ...readdirSync(path).map((name) => newest(join(path, name))))
}

const stale = () => {
  const outputs = [...Object.keys(entries).map((name) => `dist/${name}.js`), "dist/dashboard/app.js"]
  if (!outputs.every((file) => existsSync(file))) return true
  const built = Math.min(...outputs.map((file) => statSync(file).mtimeMs))
  return sources.some((path) => existsSync(path) && newest(path) > built)
}

if (!process.argv.includes("--if-stale") || stale()) {
  await build({
    entryPoints: entries,
    outdir: "dist",
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    // PGlite (and its pgvector) load their WebAssembly and data files next to their own modules; optional native addons stay optional.
    external: ["@electric-sql/pglite", "@electric-sql/pglite-pgvector", "pg-native", "bufferutil", "utf-8-validate"],
    // Bundled CommonJS packages call require(); an ES module has none of its own.
    banner: { js: '#!/usr/bin/env node\nimport { createRequire as svcCreateRequire } from "node:module"\nconst require = svcCreateRequire(import.meta.url)' },
    minify: true,
    sourcemap: true,
    logLevel: "warning"
  })
  // Both are commands: `./dist/cli.js` and `npx svc` run them directly.
  for (const name of Object.keys(entries)) chmodSync(`dist/${name}.js`, 0o755)
  await build({
    entryPoints: { app: "src/dashboard/app.ts" },
    outdir: "dist/dashboard",
    bundle: true,
    platform: "browser",
    format: "esm",
    target: "es2020",
    minify: true,
    sourcemap: true,
    logLevel: "warning"
  })
  mkdirSync("dist/dashboard", { recursive: true })
  copyFileSync("src/dashboard/index.html", "dist/dashboard/index.html")
  copyFileSync("src/dashboard/style.css", "dist/dashboard/style.css")
  copyFileSync("node_modules/uplot/dist/uPlot.min.css", "dist/dashboard/uplot.min.css")
}

// Made once: the sandbox's word vectors change only with the package they come from.
if (!existsSync(WORD_VECTORS)) buildWordVectors()
