/**
 * What the provider-adapter tests share: a provider config pointing at a
 * fake upstream, the call they send, and ways to read what a stream delivered.
 */
import { Effect, Either, Stream } from "effect"
import type { ChatChunk, ChatRequest } from "../../services/Chat.ts"
import type { ProviderConfig } from "../../services/Config.ts"
import type { AdapterFailure, ProviderPlugin, UpstreamCall, UpstreamFailure } from "../../services/Providers.ts"
import { decodeOptions } from "../../services/Registry.ts"

/** A provider of this plugin at `baseUrl`, with a short timeout and no deployments. */
export const providerConfigFor = (fixed: Pick<ProviderConfig, "id" | "plugin" | "apiKeyEnv">) =>
(baseUrl: string | undefined, overrides: Partial<ProviderConfig> = {}): ProviderConfig => ({
  ...fixed,
  baseUrl,
  timeoutMs: 2_000,
  deployments: [],
  ...overrides
})

/** The adapter `plugin` makes for `provider`, with its `options` decoded as the catalogue decodes them. */
export const makeAdapter = <O>(
  plugin: ProviderPlugin<O>,
  provider: ProviderConfig,
  env: Readonly<Record<string, string | undefined>>
) =>
  Either.match(decodeOptions(plugin, provider.options ?? {}), {
    onLeft: ({ field, reason }) => Effect.dieMessage(`options.${field}: ${reason}`),
    onRight: (options) => plugin.make(provider, options, env)
  })

/** A call of `model` to `upstreamModel` saying hello, with the request fields given. */
export const upstreamCallFor = (model: string, defaultUpstreamModel: string) =>
(request: Partial<ChatRequest> = {}, upstreamModel = defaultUpstreamModel): UpstreamCall => ({
  upstreamModel,
  request: { model, messages: [{ role: "user", content: "hello there gateway" }], ...request } as ChatRequest
})

/** The chunks a stream delivered before it failed, and its failure. */
export const collectUntilFailure = <E>(stream: Stream.Stream<ChatChunk, E>) =>
  Effect.gen(function*() {
    const received: Array<ChatChunk> = []
    const error = yield* Effect.flip(Stream.runForEach(stream, (chunk) => Effect.sync(() => received.push(chunk))))
    return { received, error }
  })

/** The text content of these chunks, joined. */
export const textOf = (chunks: ReadonlyArray<ChatChunk>) =>
  chunks.flatMap((c) => c.choices.map((choice) => choice.delta.content ?? "")).join("")

/** Resolves once the fake counted `count` client aborts, or fails after 3 s. */
export const waitForAborts = (upstream: { waitForAborts: (n: number) => Promise<void> }, count: number) =>
  Effect.promise(() => upstream.waitForAborts(count)).pipe(Effect.timeout("3 seconds"))

/** The failure an adapter call ended with, which must be the upstream's (not a translation refusal). */
export const upstreamFailureOf = (failure: AdapterFailure): UpstreamFailure => {
  if (failure._tag !== "UpstreamFailure") throw new Error(`expected an UpstreamFailure, got ${failure._tag}`)
  return failure
}
