/**
 * The built-in offline provider. It answers from the conversation itself,
 * deterministically, so a fresh install without upstream keys has a working
 * model: text replies, tool calls whose arguments fit the tool's schema,
 * structured output, token limits and streaming all behave like an upstream's.
 * No upstream, so no wire format: `request.ts` reads what the request asks
 * for, `response.ts` answers it, `stream.ts` streams that answer.
 */
import { Effect, Stream } from "effect"
import { type ProviderAdapter, type ProviderPlugin, registerPlugin } from "../../../services/Providers.ts"
import { NoOptions } from "../../../services/Registry.ts"
import { embed } from "./embed.ts"
import { complete } from "./response.ts"
import { chunksOf } from "./stream.ts"

export { SANDBOX_EMBEDDING_DIMENSIONS } from "./embed.ts"
export { countTokens, tokenize } from "./tokens.ts"

const adapter: ProviderAdapter = {
  complete,
  stream: (call) => Effect.map(complete(call), (completion) => Stream.fromIterable(chunksOf(completion))),
  embed
}

export const plugin: ProviderPlugin = {
  id: "sandbox",
  options: NoOptions,
  // It runs inside the gateway process and keeps nothing.
  privacyDefaults: { stores: false, logs: false, trains: false, operatorControlled: true },
  make: () => Effect.succeed(adapter)
}

export const SandboxPlugin = registerPlugin(plugin)
