/** What the agent layers refuse: an id the caller's account does not have (unknown or another account's), or a conversation over the cap. */
import { ConversationLimitExceeded, NotFound } from "../../services/ApiError.ts"
import { quote } from "../../services/quote.ts"

export const agentNotFound = (id: string) => new NotFound({ message: `No agent ${quote(id)}.`, param: "id" })

export const documentNotFound = (id: string) => new NotFound({ message: `No document ${quote(id)} in this agent.`, param: "id" })

export const conversationCapReached = (cap: number) =>
  new ConversationLimitExceeded({
    message: `The agent has reached its cap of ${cap} conversations; continue one with conversation_id.`,
    param: "conversation_id"
  })
