/** What the agent layers answer for an id the caller's account does not have (unknown or another account's). */
import { NotFound } from "../../services/ApiError.ts"
import { quote } from "../../services/quote.ts"

export const agentNotFound = (id: string) => new NotFound({ message: `No agent ${quote(id)}.`, param: "id" })

export const documentNotFound = (id: string) => new NotFound({ message: `No document ${quote(id)} in this agent.`, param: "id" })
