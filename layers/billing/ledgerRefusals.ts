/** What the ledger layers answer when a call cannot be held or a receipt is not the caller's, in PostgreSQL and in memory. */
import { InsufficientFunds, NotFound } from "../../services/ApiError.ts"
import { formatUsd, type Nanos } from "../../services/Money.ts"
import { quote } from "../../services/quote.ts"

export const cannotCover = (amount: Nanos) =>
  new InsufficientFunds({ message: `The available balance cannot cover this call's estimate of ${formatUsd(amount)} USD.` })

export const receiptNotFound = (id: string) => new NotFound({ message: `No receipt ${quote(id)}.`, param: "id" })
