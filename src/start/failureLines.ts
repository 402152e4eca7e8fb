/** The one line `npm start` (and the CLI) print when the app cannot start, before exiting with 1. */
import type { ServeError } from "@effect/platform/HttpServerError"
import type { DatabaseNotReady, DataDirInUse } from "../../layers/storage/Database.ts"
import type { ConfigInvalid } from "../../services/Config.ts"

/** A config mistake, naming its field. */
export const configLine = (error: ConfigInvalid): string => `invalid configuration: ${error.message}`

/** Why the listening socket could not be opened, in words that say what to change. */
const listenLine = (error: ServeError, host: string, port: number): string => {
  const cause = error.cause as NodeJS.ErrnoException | undefined
  const where = `${host}:${port}`
  switch (cause?.code) {
    case "EADDRINUSE":
      return `cannot listen on ${where}: the port is in use by another process; stop it or set PORT`
    case "EADDRNOTAVAIL":
      return `cannot listen on ${where}: no network interface has that address; set HOST to one of this machine's addresses (or 0.0.0.0)`
    case "EACCES":
      return `cannot listen on ${where}: permission denied (ports below 1024 need privileges); set PORT to 1024 or above`
    case "ENOTFOUND":
    case "EAI_AGAIN":
      return `cannot listen on ${where}: HOST "${host}" does not resolve to an address`
    default:
      return `cannot listen on ${where}: ${String(cause?.message ?? cause).split("\n")[0]}`
  }
}

export type StartFailure = ConfigInvalid | DataDirInUse | DatabaseNotReady

export const startFailureLine = (error: StartFailure): string =>
  `svc: ${error._tag === "ConfigInvalid" ? configLine(error) : error.message}`

export const listenFailureLine = (error: ServeError, host: string, port: number): string => `svc: ${listenLine(error, host, port)}`
