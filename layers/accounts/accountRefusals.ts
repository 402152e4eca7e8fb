/** What the account and key layers answer for an unknown id, the same in PostgreSQL and in memory. */
import { NotFound } from "../../services/ApiError.ts"

export const accountNotFound = (id: string) => new NotFound({ message: `No account ${id}.`, param: "id" })

export const keyNotFound = (id: string) => new NotFound({ message: `No API key ${id}.`, param: "id" })
