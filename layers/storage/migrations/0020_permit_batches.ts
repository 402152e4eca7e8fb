/**
 * One account's concurrency permits in one call (layers/admission/
 * RateLimitStorePg.ts): the permits its calls gave back and those its new
 * calls ask for, under the account's lock — one round trip for a batch, where
 * each acquisition and each release was a statement of its own. Answers
 * which of `p_acquire` were granted. `svc_permit_acquire` stays for
 * processes of the previous release.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql.unsafe(`
    CREATE FUNCTION svc_permits(
      p_key text, p_limit int, p_release text[], p_acquire text[], p_now bigint, p_expires bigint)
    RETURNS boolean[] LANGUAGE plpgsql AS $$
    DECLARE
      asked int := coalesce(array_length(p_acquire, 1), 0);
      held int;
      room int;
    BEGIN
      PERFORM pg_advisory_xact_lock(hashtext('svc_permits:' || p_key));
      IF coalesce(array_length(p_release, 1), 0) > 0 THEN
        DELETE FROM rate_limit_permits p WHERE p.key = p_key AND p.permit = ANY (p_release);
      END IF;
      IF asked = 0 THEN RETURN '{}'::boolean[]; END IF;
      DELETE FROM rate_limit_permits p WHERE p.key = p_key AND p.expires_ms <= p_now;
      SELECT count(*) INTO held FROM rate_limit_permits p WHERE p.key = p_key;
      room := greatest(0, least(asked, p_limit - held));
      INSERT INTO rate_limit_permits (key, permit, expires_ms)
        SELECT p_key, a.permit, p_expires FROM unnest(p_acquire[1:room]) AS a(permit);
      RETURN ARRAY(SELECT i <= room FROM generate_series(1, asked) AS i ORDER BY i);
    END
    $$`)
})
