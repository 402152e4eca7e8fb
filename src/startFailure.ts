/** The one line `npm start` (and the CLI) print when the app cannot start, before exiting with 1. */
import type { DatabaseNotReady, DataDirInUse } from "../layers/storage/Database.ts"
import type { ConfigInvalid } from "../services/Config.ts"

/** A config mistake, naming its field. */
export const configLine = (error: ConfigInvalid): string => `invalid configuration: ${error.message}`

export const startFailureLine = (error: ConfigInvalid | DataDirInUse | DatabaseNotReady): string =>
  `svc: ${error._tag === "ConfigInvalid" ? configLine(error) : error.message}`
