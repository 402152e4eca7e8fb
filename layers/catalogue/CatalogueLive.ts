/**
 * The catalogue built once at start from the house tier, the configured
 * models and the providers' deployments. Any inconsistency (unknown model or
 * plugin, duplicate id, options its plugin refuses, a provider its plugin
 * rejects, an attestation block its verifier kind rejects) stops the start
 * with a `ConfigInvalid` naming the field.
 */
import { Effect, Either, Layer, Option } from "effect"
import { AttestationVerifiers, verifierFor } from "../../services/Attestation.ts"
import { Catalogue, type Deployment, type Model, type TokenPrice } from "../../services/Catalogue.ts"
import { AppConfig, type Capability, ConfigInvalid, type ModelConfig, type PrivacyClass, type ProviderPrivacy } from "../../services/Config.ts"
import { fieldIn } from "../../services/fieldPath.ts"
import { parseUsd } from "../../services/Money.ts"
import { CLASS_RANK } from "../../services/Privacy.ts"
import { ProviderRegistry } from "../../services/Providers.ts"
import { decodeOptions } from "../../services/Registry.ts"
import { houseModels } from "./houseModels.ts"

/** An upstream that says nothing about its policy counts as storing, logging and training. */
const unknownPolicy: ProviderPrivacy = { stores: true, logs: true, trains: true, operatorControlled: false }

/** Classes a deployment can earn from its stated policy; attestation is checked per call elsewhere. */
export const classesEarned = (privacy: ProviderPrivacy): ReadonlyArray<PrivacyClass> => {
  const classes: Array<PrivacyClass> = ["standard_route"]
  const protectedPolicy = !privacy.stores && !privacy.logs && !privacy.trains
  if (!protectedPolicy) return classes
  classes.push("protected_provider_route")
  if (privacy.operatorControlled) classes.push("private_gateway_route")
  if (privacy.attestation !== undefined) classes.push("confidential_runtime_route")
  return classes
}

const BASE_PARAMETERS = [
  "max_tokens",
  "max_completion_tokens",
  "temperature",
  "top_p",
  "stop",
  "seed",
  "presence_penalty",
  "frequency_penalty",
  "user"
]

const parametersFor = (capabilities: ReadonlyArray<Capability>): ReadonlyArray<string> => {
  if (!capabilities.includes("chat")) return []
  return [
    ...BASE_PARAMETERS,
    ...(capabilities.includes("streaming") ? ["stream", "stream_options"] : []),
    ...(capabilities.includes("tools") ? ["tools", "tool_choice", "parallel_tool_calls"] : []),
    ...(capabilities.includes("structured_output") ? ["response_format"] : [])
  ]
}

const priceOf = (prices: { readonly input: string; readonly output?: string | undefined }): TokenPrice => ({
  input: Option.getOrThrow(parseUsd(prices.input)),
  output: prices.output === undefined ? undefined : Option.getOrThrow(parseUsd(prices.output))
})

const FREE: TokenPrice = { input: 0n, output: 0n }

export const CatalogueLive = Layer.scoped(
  Catalogue,
  Effect.gen(function*() {
    const config = yield* AppConfig
    const registry = yield* ProviderRegistry
    const verifiers = yield* AttestationVerifiers

    const definitions = new Map<string, ModelConfig & { readonly tier: Model["tier"] }>()
    for (const house of houseModels) definitions.set(house.id, house)
    for (const [index, model] of config.models.entries()) {
      if (definitions.has(model.id)) {
        return yield* new ConfigInvalid({ field: `models[${index}].id`, reason: `${model.id} is already defined` })
      }
      definitions.set(model.id, { ...model, tier: "third_party" })
    }

    const deployments = new Map<string, Array<Deployment>>()
    const providerIds = new Set<string>()
    for (const [index, provider] of config.providers.entries()) {
      const at = `providers[${index}]`
      if (providerIds.has(provider.id)) {
        return yield* new ConfigInvalid({ field: `${at}.id`, reason: `provider id "${provider.id}" is used twice` })
      }
      providerIds.add(provider.id)
      const plugin = registry.get(provider.plugin)
      if (Option.isNone(plugin)) {
        const known = registry.ids().join(", ")
        return yield* new ConfigInvalid({ field: `${at}.plugin`, reason: `unknown plugin "${provider.plugin}" (known: ${known})` })
      }
      const options = decodeOptions(plugin.value, provider.options ?? {})
      if (Either.isLeft(options)) {
        const { field, reason } = options.left
        return yield* new ConfigInvalid({ field: fieldIn(`${at}.options`, field), reason })
      }
      const adapter = yield* plugin.value.make(provider, options.right, config.env).pipe(
        Effect.mapError((error) => new ConfigInvalid({ field: `${at}.${error.field}`, reason: error.reason }))
      )
      const policy = provider.privacy ?? plugin.value.privacyDefaults ?? unknownPolicy
      const verifier = policy.attestation === undefined ? undefined : verifierFor(verifiers, policy.attestation)
      if (verifier !== undefined && Either.isLeft(verifier)) {
        const { field, reason } = verifier.left
        return yield* new ConfigInvalid({ field: fieldIn(`${at}.privacy.attestation`, field), reason })
      }
      const privacyClasses = classesEarned(policy)
      for (const [slot, deployment] of provider.deployments.entries()) {
        if (!definitions.has(deployment.model)) {
          return yield* new ConfigInvalid({
            field: `${at}.deployments[${slot}].model`,
            reason: `unknown model "${deployment.model}"`
          })
        }
        const list = deployments.get(deployment.model) ?? []
        list.push({
          // Stable across processes with the same config; shown to operators only.
          id: `${provider.id}/${slot}`,
          model: deployment.model,
          provider,
          upstreamModel: deployment.upstreamModel ?? deployment.model.replace(/^svc\//, ""),
          // An omitted cost means a free upstream (the sandbox, self-hosted models).
          cost: deployment.cost === undefined ? FREE : priceOf(deployment.cost),
          privacyClasses,
          policy,
          weight: deployment.weight,
          adapter
        })
        deployments.set(deployment.model, list)
      }
    }

    const models = new Map<string, Model>()
    for (const [id, definition] of definitions) {
      const served = deployments.get(id)
      if (served === undefined) continue
      const earned = new Set(served.flatMap((deployment) => deployment.privacyClasses))
      models.set(id, {
        id,
        name: definition.name ?? id.slice("svc/".length),
        context: definition.context,
        ...(definition.dimensions !== undefined ? { dimensions: definition.dimensions } : {}),
        pricing: priceOf(definition.pricing),
        modalities: definition.modalities,
        capabilities: definition.capabilities,
        supportedParameters: definition.supported_parameters ?? parametersFor(definition.capabilities),
        quality: definition.quality ?? 0.5,
        tier: definition.tier,
        privacyClasses: CLASS_RANK.filter((privacyClass) => earned.has(privacyClass)),
        ...(definition.created !== undefined ? { created: definition.created } : {}),
        ...(definition.ownedBy !== undefined ? { ownedBy: definition.ownedBy } : {})
      })
    }
    const list = [...models.values()]
    return {
      list,
      get: (id) => Option.fromNullable(models.get(id)),
      deployments: (id) => deployments.get(id) ?? []
    }
  })
)
