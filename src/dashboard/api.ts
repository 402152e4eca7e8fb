/**
 * The dashboard's only way to the data: the gateway's public API with the key
 * the user pasted (kept in sessionStorage, never in a URL or cookie). What the
 * page shows is exactly what that key may read.
 */
const STORAGE_KEY = "svc.dashboard.key"

export const storedKey = (): string | null => sessionStorage.getItem(STORAGE_KEY)
export const storeKey = (key: string) => sessionStorage.setItem(STORAGE_KEY, key)
export const forgetKey = () => sessionStorage.removeItem(STORAGE_KEY)

/** A refusal of the API, with the contract's code and message. */
export class ApiRefusal extends Error {
  constructor(readonly status: number, readonly code: string, message: string) {
    super(message)
  }
}

/** The account an admin key looks at (`accountId` on every monitoring read); null for a customer key's own. */
let selected: string | null = null
export const selectAccount = (accountId: string | null) => void (selected = accountId)
export const selectedAccount = () => selected

/** `path` with the selected account, if any. */
export const forAccount = (path: string) =>
  selected === null ? path : `${path}${path.includes("?") ? "&" : "?"}accountId=${encodeURIComponent(selected)}`

export const get = <A>(path: string, key = storedKey()): Promise<A> => send<A>("GET", path, undefined, key)

export const send = async <A>(method: string, path: string, payload?: unknown, key = storedKey()): Promise<A> => {
  const response = await fetch(path, {
    method,
    headers: { authorization: `Bearer ${key ?? ""}`, ...(payload === undefined ? {} : { "content-type": "application/json" }) },
    cache: "no-store",
    ...(payload === undefined ? {} : { body: JSON.stringify(payload) })
  })
  const answer: any = await response.json().catch(() => ({}))
  if (!response.ok) {
    throw new ApiRefusal(response.status, answer?.error?.code ?? String(response.status), answer?.error?.message ?? response.statusText)
  }
  return answer as A
}

export interface Page<A> {
  readonly data: ReadonlyArray<A>
  readonly next_cursor: string | null
  readonly has_more: boolean
}

export interface Percentiles {
  readonly p50: number | null
  readonly p95: number | null
  readonly p99: number | null
}

export interface Summary {
  readonly account_id: string
  readonly requests: number
  readonly requests_per_minute: number
  readonly error_rate: number | null
  readonly errors_by_code: Record<string, number>
  readonly latency_ms: Percentiles
  readonly ttft_ms: Percentiles
  readonly tokens: { readonly input: number; readonly output: number }
  readonly spend_usd: string
  readonly payment: {
    readonly balance_usd: string
    readonly held_usd: string
    readonly available_usd: string
    readonly burn_rate_usd_per_hour: string
    readonly runway_hours: number | null
    readonly status: "ok" | "low" | "exhausted"
  }
  readonly series: ReadonlyArray<{
    readonly at: string
    readonly requests: number
    readonly errors: number
    readonly input_tokens: number
    readonly output_tokens: number
    readonly spend_usd: string
    readonly p95_latency_ms: number | null
  }>
  readonly providers: {
    readonly data: ReadonlyArray<{
      readonly model: string
      readonly privacy_class: string
      readonly availability: number
      readonly error_rate: number | null
      readonly p95_latency_ms: number | null
    }>
  }
}

export interface UsageCall {
  readonly receipt_id: string
  readonly created_at: string
  readonly model: string
  readonly privacy_class: string
  readonly input_tokens: number
  readonly output_tokens: number
  readonly cost_usd: string
}

export interface LogEvent {
  readonly id: string
  readonly type: string
  readonly created_at: string
  readonly receipt_id?: string
  readonly data: Record<string, unknown>
}

export interface Receipt {
  readonly id: string
  readonly created_at: string
  readonly model: string
  readonly privacy_class: string
  readonly usage: { readonly input_tokens: number; readonly output_tokens: number }
  readonly cost: { readonly upstream_usd: string; readonly margin_usd: string; readonly total_usd: string }
  readonly reservation: { readonly estimated_usd: string }
  readonly balance_after_usd: string
  readonly attempts: ReadonlyArray<{ readonly model: string; readonly outcome: string; readonly latency_ms: number }>
}

export interface Account {
  readonly id: string
  readonly name: string
  readonly balance_usd: string
  readonly reserved_usd: string
}

export interface ApiKey {
  readonly id: string
  readonly name: string | null
  readonly hint: string
  readonly scopes: ReadonlyArray<string>
  readonly revoked_at: string | null
}
