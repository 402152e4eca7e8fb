/**
 * A key's rate-limit steps counted in one call (layers/admission/
 * RateLimitStorePg.ts): the takes of the calls that arrived together and the
 * corrections of those that ended, in order, under one lock of the key's
 * buckets — one round trip and one commit for a batch, where each take and
 * each correction was a statement of its own that waited on the same rows.
 * `p_kinds[s]` is 0 for a take, else the bucket (1-based) step s corrects;
 * `p_amounts` holds each step's amount of every bucket, step after step.
 * Answers each step's outcome and each bucket's tokens after it, step after
 * step. `svc_rate_take` stays for processes of the previous release.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  // Buckets are locked in key order, so two counts of the same buckets cannot deadlock.
  yield* sql.unsafe(`
    CREATE FUNCTION svc_rate_count(
      p_keys text[], p_limits float8[], p_windows float8[], p_kinds int[], p_amounts float8[], p_now bigint)
    RETURNS TABLE (ok boolean[], available float8[]) LANGUAGE plpgsql AS $$
    DECLARE
      n int := coalesce(array_length(p_keys, 1), 0);
      steps int := coalesce(array_length(p_kinds, 1), 0);
      i int;
      s int;
      held float8;
      at bigint;
      fits boolean;
      left_ float8[] := array_fill(0::float8, ARRAY[n]);
      oks boolean[] := array_fill(true, ARRAY[steps]);
      after_ float8[] := array_fill(0::float8, ARRAY[steps * n]);
    BEGIN
      FOR i IN SELECT k.ord FROM unnest(p_keys) WITH ORDINALITY AS k(name, ord) ORDER BY k.name LOOP
        INSERT INTO rate_limit_buckets (key, tokens, updated_ms) VALUES (p_keys[i], p_limits[i], p_now)
          ON CONFLICT DO NOTHING;
        SELECT b.tokens, b.updated_ms INTO held, at FROM rate_limit_buckets b WHERE b.key = p_keys[i] FOR UPDATE;
        left_[i] := least(p_limits[i], held + greatest(0, p_now - at) * p_limits[i] / p_windows[i]);
      END LOOP;
      FOR s IN 1 .. steps LOOP
        IF p_kinds[s] = 0 THEN
          fits := true;
          FOR i IN 1 .. n LOOP
            IF left_[i] < p_amounts[(s - 1) * n + i] THEN fits := false; END IF;
          END LOOP;
          IF fits THEN
            FOR i IN 1 .. n LOOP left_[i] := left_[i] - p_amounts[(s - 1) * n + i]; END LOOP;
          END IF;
          oks[s] := fits;
        ELSE
          i := p_kinds[s];
          left_[i] := least(p_limits[i], left_[i] - p_amounts[(s - 1) * n + i]);
        END IF;
        FOR i IN 1 .. n LOOP after_[(s - 1) * n + i] := left_[i]; END LOOP;
      END LOOP;
      FOR i IN 1 .. n LOOP
        UPDATE rate_limit_buckets b SET tokens = left_[i], updated_ms = greatest(b.updated_ms, p_now)
          WHERE b.key = p_keys[i];
      END LOOP;
      RETURN QUERY SELECT oks, after_;
    END
    $$`)
})
