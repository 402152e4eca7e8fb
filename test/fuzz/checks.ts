/**
 * What must hold of every answer the fuzz suite gets: never a status of 500
 * or more; every error in the contract's envelope with a known code, the
 * `x-request-id` as its `request_id`, a short message, and no more than a
 * short prefix of any long input quoted back; and, for a batch of refusals,
 * nothing written (the money and record tables fingerprinted before and after).
 */
import { FACTS } from "../../services/ApiError.ts"
import { MAX_MESSAGE as MAX_MESSAGE_CHECK } from "../../services/quote.ts"
import type { FuzzCase } from "./cases.ts"
import type { RawResponse } from "./rawHttp.ts"

const CODES = new Set(Object.values(FACTS).map((fact) => fact.code))

/** A prefix this long of an input must never appear in an error (services/quote.ts quotes 48 characters). */
const ECHO = 64

const fail = (fuzzCase: FuzzCase, response: RawResponse, why: string): never => {
  const request = { ...fuzzCase.request, body: fuzzCase.request.body?.toString().slice(0, 300) }
  throw new Error(`${why}\n  case: ${fuzzCase.label} ${JSON.stringify(request).slice(0, 800)}\n  answer: ${response.status} ${response.body.slice(0, 400)}`)
}

/** Throws, naming the case, when `response` breaks a rule. */
export const checkResponse = (fuzzCase: FuzzCase, response: RawResponse): void => {
  if (response.status >= 500) fail(fuzzCase, response, `status ${response.status}`)
  if (response.headers["x-request-id"]?.startsWith("req_") !== true) fail(fuzzCase, response, "no x-request-id")
  if (response.status < 400) return
  if (fuzzCase.request.method === "HEAD") return
  let body: any
  try {
    body = JSON.parse(response.body)
  } catch {
    fail(fuzzCase, response, "an error body that is not JSON")
  }
  const error = body?.error
  const keys = body === null || typeof body !== "object" ? [] : Object.keys(body)
  if (keys.length !== 1 || keys[0] !== "error" || error === null || typeof error !== "object") fail(fuzzCase, response, "not the envelope")
  if (Object.keys(error).sort().join() !== "code,message,param,request_id,type") fail(fuzzCase, response, "envelope fields")
  if (!CODES.has(error.code)) fail(fuzzCase, response, `unknown code ${error.code}`)
  if (FACTS_BY_CODE.get(error.code)?.includes(response.status) !== true) fail(fuzzCase, response, `code ${error.code} with status ${response.status}`)
  if (typeof error.message !== "string" || error.message.length < 5 || error.message.length > MAX_MESSAGE_CHECK) {
    fail(fuzzCase, response, `message of ${String(error.message?.length)} characters`)
  }
  if (error.param !== null && (typeof error.param !== "string" || error.param.length > MAX_MESSAGE_CHECK)) fail(fuzzCase, response, "param")
  if (error.request_id !== response.headers["x-request-id"]) fail(fuzzCase, response, "request_id is not the x-request-id")
  for (const input of fuzzCase.sent) {
    const prefix = input.slice(0, ECHO)
    if (error.message.includes(prefix) || (error.param ?? "").includes(prefix)) fail(fuzzCase, response, "the error quotes a long input")
  }
}

const FACTS_BY_CODE = new Map<string, Array<number>>()
for (const { code, status } of Object.values(FACTS)) FACTS_BY_CODE.set(code, [...(FACTS_BY_CODE.get(code) ?? []), status])

/**
 * Tables whose rows a refused request must not touch (events that record a refusal itself are the
 * refusal's answer, not a write). An account's credit leased by the gateway for its next calls
 * (layers/billing/creditLeases.ts) goes back in the background once the account is idle: what the
 * account holds is compared without it.
 */
export const FINGERPRINT_SQL = `SELECT
  (SELECT md5(coalesce(string_agg(
     (to_jsonb(t) || jsonb_build_object('reserved_usd',
       t.reserved_usd - coalesce((SELECT sum(amount_usd) FROM credit_leases c WHERE c.account_id = t.id), 0)))::text,
     '|' ORDER BY id), '')) FROM accounts t) AS accounts,
  (SELECT md5(coalesce(string_agg(t::text, '|' ORDER BY id), '')) FROM api_keys t) AS api_keys,
  (SELECT md5(coalesce(string_agg(t::text, '|' ORDER BY id), '')) FROM ledger_entries t) AS ledger_entries,
  (SELECT md5(coalesce(string_agg(t::text, '|' ORDER BY id), '')) FROM receipts t) AS receipts,
  (SELECT md5(coalesce(string_agg(t::text, '|' ORDER BY id), '')) FROM reservations t) AS reservations,
  (SELECT count(*)::text FROM idempotency_keys) AS idempotency_keys,
  (SELECT count(*)::text FROM transcripts) AS transcripts,
  (SELECT md5(coalesce(string_agg(t::text, '|' ORDER BY id), '')) FROM events t
     WHERE type NOT IN ('payment.insufficient_funds', 'privacy.rejected')) AS events`
