/** `node --import ./bench/typescript.mjs file.ts`: the bench's TypeScript loader (typescriptHooks.mjs). */
import { register } from "node:module"

register("./typescriptHooks.mjs", import.meta.url)
