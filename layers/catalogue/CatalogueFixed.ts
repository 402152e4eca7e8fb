/**
 * A fixed catalogue for unit tests: the models and deployments given, as
 * they are (no config decoding, no plugins). A model's `privacyClasses` are
 * those its deployments earn, as in the real catalogue; a model without a
 * deployment is not listed.
 */
import { Layer, Option } from "effect"
import { Catalogue, type Deployment, type Model } from "../../services/Catalogue.ts"
import { CLASS_RANK } from "../../services/Privacy.ts"

export const CatalogueFixed = (
  entries: ReadonlyArray<{ readonly model: Model; readonly deployments: ReadonlyArray<Deployment> }>
): Layer.Layer<Catalogue> => {
  const served = entries.filter((entry) => entry.deployments.length > 0)
  const models = new Map(served.map(({ deployments, model }) => {
    const earned = new Set(deployments.flatMap((deployment) => deployment.privacyClasses))
    return [model.id, { ...model, privacyClasses: CLASS_RANK.filter((privacyClass) => earned.has(privacyClass)) }]
  }))
  const deployments = new Map(served.map((entry) => [entry.model.id, entry.deployments]))
  return Layer.succeed(Catalogue, {
    list: [...models.values()],
    get: (id) => Option.fromNullable(models.get(id)),
    deployments: (id) => deployments.get(id) ?? []
  })
}
