/**
 * Every provider plugin the gateway ships, one line each. A provider is a
 * folder with the same files (`index.ts`, `request.ts`, `response.ts`,
 * `stream.ts`, `embed.ts` where it has embeddings); adding one = one new
 * folder + one line here.
 */
import { Layer } from "effect"
import { AnthropicPlugin } from "./anthropic/index.ts"
import { GeminiPlugin } from "./gemini/index.ts"
import { OpenAiCompatiblePlugin } from "./openaiCompatible/index.ts"
import { SandboxPlugin } from "./sandbox/index.ts"

export const Plugins = Layer.mergeAll(
  SandboxPlugin,
  AnthropicPlugin,
  GeminiPlugin,
  OpenAiCompatiblePlugin
)
