/** Every plugin the gateway ships. Adding one = one new file + one line here. */
import { Layer } from "effect"
import { AnthropicPlugin } from "./anthropic.ts"
import { GeminiPlugin } from "./gemini.ts"
import { OpenAiCompatiblePlugin } from "./openaiCompatible.ts"
import { SandboxPlugin } from "./sandbox.ts"

export const Plugins = Layer.mergeAll(
  SandboxPlugin,
  AnthropicPlugin,
  GeminiPlugin,
  OpenAiCompatiblePlugin
)
