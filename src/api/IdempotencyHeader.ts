/** The `Idempotency-Key` request header of the billable POSTs. */
import { Schema } from "effect"

export const IdempotencyHeaders = Schema.Struct({
  "idempotency-key": Schema.optional(
    Schema.String.pipe(
      Schema.minLength(1, { message: () => "expected 1 to 255 characters" }),
      Schema.maxLength(255, { message: () => "expected 1 to 255 characters" })
    ).annotations({
      description: "A retry with the same key and body returns the first response and is billed once"
    })
  )
})
