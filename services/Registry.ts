/**
 * One plugin shape for every kind of plugin (provider adapters, router modes,
 * attestation verifiers): a plugin has an `id` (the value a config entry or a
 * request names it by) and the schema of the options its config entry may
 * carry. A plugin file exports one Layer that registers it; adding a plugin is
 * one new file (or folder) and one line in its kind's index.
 */
import { Context, Effect, Either, Layer, type Option, ParseResult, Schema } from "effect"
import { fieldPath } from "./fieldPath.ts"

/** What every plugin declares. */
export interface Plugin<Options = unknown> {
  /** Its key in the registry: `plugin` of a provider entry, a router mode's name, `kind` of an attestation block. */
  readonly id: string
  /** Its own options, decoded from the config entry (unknown fields are refused). */
  readonly options: Schema.Schema<Options, any>
}

/** The plugins of one kind, filled at start by their Layers. */
export interface Registry<P extends Plugin<any>> {
  readonly register: (plugin: P) => Effect.Effect<void>
  readonly get: (id: string) => Option.Option<P>
  readonly ids: () => ReadonlyArray<string>
}

/** The Layer a plugin file exports: registering `plugin` in its kind's registry is all it does. */
export const registerIn = <I, P extends Plugin<any>>(registry: Context.Tag<I, Registry<P>>) =>
(plugin: P): Layer.Layer<never, never, I> => Layer.effectDiscard(Effect.flatMap(registry, (plugins) => plugins.register(plugin)))

/** Options a plugin's config entry holds that its schema refuses: `field` is a path inside the entry. */
export interface OptionsRefused {
  readonly field: string
  readonly reason: string
}

/** Decodes a config entry's options with the plugin's own schema; the first problem names its field. */
export const decodeOptions = <Options>(
  plugin: Plugin<Options>,
  raw: unknown
): Either.Either<Options, OptionsRefused> =>
  Either.mapLeft(
    Schema.decodeUnknownEither(plugin.options, { errors: "first", onExcessProperty: "error" })(raw),
    (error) => {
      const [issue] = ParseResult.ArrayFormatter.formatErrorSync(error)
      return { field: fieldPath(issue?.path ?? []), reason: issue?.message ?? "invalid" }
    }
  )

/** Options of a plugin that takes none: an empty object (an empty `Schema.Struct` would let any value through). */
export const NoOptions = Schema.Record({ key: Schema.String, value: Schema.Never })
