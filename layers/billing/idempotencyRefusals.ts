/** The two refusals of a reused `Idempotency-Key`, the same whichever layer keeps the keys. */
import { Conflict } from "../../services/ApiError.ts"

export const usedWithAnotherBody = () =>
  new Conflict({ message: "This Idempotency-Key was used with a different request body.", param: "Idempotency-Key" })

export const stillRunning = () =>
  new Conflict({
    message: "A request with this Idempotency-Key is still in progress; retry when it has finished.",
    param: "Idempotency-Key"
  })
