/**
 * The key pairs callers seal legacy `encryptedPrompt`s to. Kept in the
 * database so every gateway instance on it opens what any of them published.
 * At most one key is current; a retired key still opens prompts for a grace
 * period (layers/privacy/SealedPromptsPg.ts).
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE prompt_keys (
      kid text PRIMARY KEY,
      public_jwk jsonb NOT NULL,
      private_jwk jsonb NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      retired_at timestamptz
    )`
  // Instances starting together on a new database each generate a key; only one becomes current.
  yield* sql`CREATE UNIQUE INDEX prompt_keys_one_current ON prompt_keys ((retired_at IS NULL)) WHERE retired_at IS NULL`
})
