/** What the account and key layers answer for an unknown id, the same in PostgreSQL and in memory. */
import { NotFound } from "../../services/ApiError.ts"
import { quote } from "../../services/quote.ts"

export const accountNotFound = (id: string) => new NotFound({ message: `No account ${quote(id)}.`, param: "id" })

export const keyNotFound = (id: string) => new NotFound({ message: `No API key ${quote(id)}.`, param: "id" })
