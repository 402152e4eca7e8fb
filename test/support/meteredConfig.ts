/**
 * The config of a gateway with one metered model (`svc/metered`, $1/$2 per
 * million tokens, costing $0.50/$1.00 upstream) served by one OpenAI-compatible
 * upstream at `baseUrl`: the shape of most billing tests.
 */
export const meteredConfig = (baseUrl: string, timeoutMs = 10_000) => ({
  models: [{
    id: "svc/metered",
    context: 32000,
    pricing: { input: "1.00", output: "2.00" },
    modalities: ["text"],
    capabilities: ["chat", "streaming"]
  }],
  providers: [{
    id: "metered",
    plugin: "openai-compatible",
    baseUrl,
    timeoutMs,
    deployments: [{ model: "svc/metered", upstreamModel: "m", cost: { input: "0.50", output: "1.00" } }]
  }]
})
