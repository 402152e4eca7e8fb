/** The house tier (spec 2.5): always defined, with the spec's prices, contexts and capabilities. */
import type { ModelConfig } from "../../services/Config.ts"

export const houseModels: ReadonlyArray<ModelConfig & { readonly tier: "swift" | "balanced" | "pro" | "premier" | "embed" }> = [
  {
    id: "svc/swift",
    name: "Swift",
    tier: "swift",
    context: 128_000,
    pricing: { input: "0.035", output: "0.14" },
    modalities: ["text"],
    capabilities: ["chat", "streaming"],
    quality: 0.55
  },
  {
    id: "svc/balanced",
    name: "Balanced",
    tier: "balanced",
    context: 300_000,
    pricing: { input: "0.06", output: "0.24" },
    modalities: ["text", "image"],
    capabilities: ["chat", "vision", "streaming"],
    quality: 0.7
  },
  {
    id: "svc/pro",
    name: "Pro",
    tier: "pro",
    context: 300_000,
    pricing: { input: "0.80", output: "3.20" },
    modalities: ["text", "image"],
    capabilities: ["chat", "vision", "streaming"],
    quality: 0.85
  },
  {
    id: "svc/premier",
    name: "Premier",
    tier: "premier",
    context: 1_000_000,
    pricing: { input: "2.50", output: "12.50" },
    modalities: ["text", "image"],
    capabilities: ["chat", "vision", "streaming"],
    quality: 0.95
  },
  {
    id: "svc/embed",
    name: "Embed",
    tier: "embed",
    context: 8_000,
    dimensions: 1536,
    pricing: { input: "0.02" },
    modalities: ["text"],
    capabilities: ["embeddings"],
    quality: 0.7
  }
]
