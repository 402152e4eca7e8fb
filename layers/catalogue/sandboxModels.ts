/**
 * Third-party-style models the offline sandbox serves on the built-in default
 * install, beside the house tier: the house tier has chat, vision and
 * streaming only (spec 2.5), so without these a fresh install could not
 * answer a tool call or a JSON schema. Priced like real models so billing,
 * routing and receipts behave as they will with a real upstream.
 */
import type { ModelConfig } from "../../services/Config.ts"

export const sandboxModels: ReadonlyArray<ModelConfig> = [
  {
    id: "svc/sandbox-mini",
    name: "Sandbox Mini",
    context: 128_000,
    pricing: { input: "0.10", output: "0.40" },
    modalities: ["text"],
    capabilities: ["chat", "streaming", "tools", "structured_output"],
    quality: 0.6
  },
  {
    id: "svc/sandbox-large",
    name: "Sandbox Large",
    context: 300_000,
    pricing: { input: "1.00", output: "4.00" },
    modalities: ["text", "image"],
    capabilities: ["chat", "vision", "streaming", "tools", "structured_output"],
    quality: 0.85
  },
  {
    id: "svc/sandbox-reasoner",
    name: "Sandbox Reasoner",
    context: 200_000,
    pricing: { input: "2.00", output: "8.00" },
    modalities: ["text"],
    // Thinks aloud first (plugins/providers/sandbox/reasoning.ts): `reasoning_content`, billed as output.
    capabilities: ["chat", "streaming", "tools", "structured_output", "reasoning"],
    quality: 0.9
  }
]
