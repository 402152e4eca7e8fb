/** The one line `npm start` prints when it cannot start, before it exits with 1. */
import type { DataDirInUse } from "../layers/storage/Database.ts"
import type { ConfigInvalid } from "../services/Config.ts"

export const startFailureLine = (error: ConfigInvalid | DataDirInUse): string =>
  error._tag === "ConfigInvalid" ? `svc: invalid configuration: ${error.message}` : `svc: ${error.message}`
