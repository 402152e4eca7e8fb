/**
 * The model catalogue: which models exist, what they cost the customer, and
 * the deployments (provider + upstream model) that serve each one.
 */
import { Context, type Option } from "effect"
import type { Capability, Modality, PrivacyClass, ProviderConfig, ProviderPrivacy } from "./Config.ts"
import type { Nanos } from "./Money.ts"
import type { ProviderAdapter } from "./Providers.ts"

export type Tier = "swift" | "balanced" | "pro" | "premier" | "embed" | "third_party"

/** Nano-dollars per one million tokens. */
export interface TokenPrice {
  readonly input: Nanos
  readonly output: Nanos | undefined
}

export interface Model {
  readonly id: string
  readonly name: string
  readonly context: number
  /** Embedding models: the largest `dimensions` a caller may ask for (config); none: the API's own bound. */
  readonly dimensions?: number
  /** What the customer pays. */
  readonly pricing: TokenPrice
  readonly modalities: ReadonlyArray<Modality>
  readonly capabilities: ReadonlyArray<Capability>
  readonly supportedParameters: ReadonlyArray<string>
  readonly quality: number
  readonly tier: Tier
  /** Classes that some deployment of this model can earn. */
  readonly privacyClasses: ReadonlyArray<PrivacyClass>
  /** Unix seconds for the record's `created`; none: `CATALOGUE_EPOCH`. */
  readonly created?: number
  /** The record's `owned_by`; none: `svc`. */
  readonly ownedBy?: string
}

/** 2026-01-01T00:00:00Z: the `created` of models that state none (the house tier among them), stable across processes. */
export const CATALOGUE_EPOCH = 1_767_225_600

export interface Deployment {
  /** `<provider id>/<index in its deployments>`: stable for a config, shared by processes, never shown to API consumers. */
  readonly id: string
  readonly model: string
  readonly provider: ProviderConfig
  readonly upstreamModel: string
  /** What the upstream charges. */
  readonly cost: TokenPrice
  readonly privacyClasses: ReadonlyArray<PrivacyClass>
  /** The provider's stated data policy (config, else the plugin's defaults, else the weakest). */
  readonly policy: ProviderPrivacy
  /** Share of traffic among equally good deployments of a model (default 1). */
  readonly weight: number
  readonly adapter: ProviderAdapter
}

export class Catalogue extends Context.Tag("svc/Catalogue")<Catalogue, {
  /** Models that have at least one deployment. */
  readonly list: ReadonlyArray<Model>
  /** A listed model by id. */
  readonly get: (id: string) => Option.Option<Model>
  /** Deployments that serve a model, in config order. */
  readonly deployments: (modelId: string) => ReadonlyArray<Deployment>
}>() {}
