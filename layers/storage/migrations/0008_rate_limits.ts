/**
 * Rate limits shared by every gateway process on one PostgreSQL database
 * (layers/admission/RateLimitStorePg.ts): token buckets (tokens left at
 * `updated_ms`, refilled continuously) and concurrency permits with a lease.
 * The multi-bucket take and the permit count are functions, so each is one
 * round trip and atomic. Times are the gateways' clocks, in milliseconds.
 * An account's own cap on concurrent calls (null: the config's default).
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE accounts ADD COLUMN concurrency integer`
  yield* sql`
    CREATE TABLE rate_limit_buckets (
      key text PRIMARY KEY,
      tokens double precision NOT NULL,
      updated_ms bigint NOT NULL
    )`
  yield* sql`
    CREATE TABLE rate_limit_permits (
      key text NOT NULL,
      permit text NOT NULL,
      expires_ms bigint NOT NULL,
      PRIMARY KEY (key, permit)
    )`
  // Buckets are locked in key order, so two takes of the same buckets cannot deadlock.
  yield* sql.unsafe(`
    CREATE FUNCTION svc_rate_take(p_keys text[], p_limits float8[], p_windows float8[], p_amounts float8[], p_now bigint)
    RETURNS TABLE (ok boolean, available float8[]) LANGUAGE plpgsql AS $$
    DECLARE
      i int;
      held float8;
      at bigint;
      left_ float8[] := array_fill(0::float8, ARRAY[coalesce(array_length(p_keys, 1), 0)]);
      fits boolean := true;
    BEGIN
      FOR i IN SELECT k.ord FROM unnest(p_keys) WITH ORDINALITY AS k(name, ord) ORDER BY k.name LOOP
        INSERT INTO rate_limit_buckets (key, tokens, updated_ms) VALUES (p_keys[i], p_limits[i], p_now)
          ON CONFLICT DO NOTHING;
        SELECT b.tokens, b.updated_ms INTO held, at FROM rate_limit_buckets b WHERE b.key = p_keys[i] FOR UPDATE;
        left_[i] := least(p_limits[i], held + greatest(0, p_now - at) * p_limits[i] / p_windows[i]);
        IF left_[i] < p_amounts[i] THEN fits := false; END IF;
      END LOOP;
      FOR i IN 1 .. coalesce(array_length(p_keys, 1), 0) LOOP
        IF fits THEN left_[i] := left_[i] - p_amounts[i]; END IF;
        UPDATE rate_limit_buckets b SET tokens = left_[i], updated_ms = greatest(b.updated_ms, p_now)
          WHERE b.key = p_keys[i];
      END LOOP;
      RETURN QUERY SELECT fits, left_;
    END
    $$`)
  // One account's permits are counted under a transaction lock, so two processes cannot both take the last.
  yield* sql.unsafe(`
    CREATE FUNCTION svc_permit_acquire(p_key text, p_permit text, p_limit int, p_now bigint, p_expires bigint)
    RETURNS boolean LANGUAGE plpgsql AS $$
    DECLARE
      held int;
    BEGIN
      PERFORM pg_advisory_xact_lock(hashtext('svc_permits:' || p_key));
      DELETE FROM rate_limit_permits p WHERE p.key = p_key AND p.expires_ms <= p_now;
      SELECT count(*) INTO held FROM rate_limit_permits p WHERE p.key = p_key;
      IF held >= p_limit THEN RETURN false; END IF;
      INSERT INTO rate_limit_permits (key, permit, expires_ms) VALUES (p_key, p_permit, p_expires);
      RETURN true;
    END
    $$`)
})
