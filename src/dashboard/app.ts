/**
 * The dashboard (`/dashboard`): log in with a key, then the account's
 * balance and health, charts of the window, recent calls (a receipt in
 * detail), the event log a page at a time, and provider health — polled
 * every 5 s while the tab is visible, paged with the API's cursors.
 */
import { loadAccounts, loadKeys, wireAdmin } from "./admin.ts"
import { loadAgents } from "./agents.ts"
import {
  ApiRefusal,
  forAccount,
  forgetKey,
  get,
  type LogEvent,
  type Page,
  type Receipt,
  selectAccount,
  storedKey,
  storeKey,
  type Summary,
  type UsageCall
} from "./api.ts"
import { drawCharts } from "./charts.ts"
import { appendRows, byId, cards, el, ms, percent, table, time, usd } from "./render.ts"

const POLL_MS = 5000
let timer: number | undefined
let logCursor: string | null = null

const show = (signedIn: boolean) => {
  byId("login").hidden = signedIn
  byId("board").hidden = !signedIn
  byId("session").hidden = !signedIn
}

/** A valid key that may read none of this page. */
class MissingScope extends Error {}

const refusalText = (error: unknown) =>
  error instanceof ApiRefusal
    ? error.status === 401 ? "This key was refused (401): check it, and that it has the monitoring scope." : `${error.status}: ${error.message}`
    : error instanceof MissingScope
    ? "This key has neither the monitoring nor the admin scope: the dashboard shows nothing it may not read."
    : "The gateway could not be reached."

const renderSummary = (summary: Summary) => {
  const payment = summary.payment
  cards(byId("payment"), [
    ["Balance", usd(payment.balance_usd)],
    ["Held", usd(payment.held_usd)],
    ["Burn rate", `${usd(payment.burn_rate_usd_per_hour)}/h`],
    ["Runway", payment.runway_hours === null ? "—" : `${payment.runway_hours} h`],
    ["Status", payment.status, `status-${payment.status}`]
  ])
  cards(byId("calls"), [
    ["Requests", String(summary.requests)],
    ["Error rate", percent(summary.error_rate)],
    ["p50 latency", ms(summary.latency_ms.p50)],
    ["p95 latency", ms(summary.latency_ms.p95)],
    ["Time to first token (p50)", ms(summary.ttft_ms.p50)],
    ["Spend", usd(summary.spend_usd)],
    ["Tokens in / out", `${summary.tokens.input} / ${summary.tokens.output}`]
  ])
  drawCharts(summary)
  table(byId("providers"), "Availability and errors by model and privacy class", ["Model", "Class", "Availability", "Error rate", "p95"], summary.providers.data.map((row) => [
    row.model,
    row.privacy_class,
    percent(row.availability),
    percent(row.error_rate),
    ms(row.p95_latency_ms)
  ]))
}

const openReceipt = async (id: string) => {
  const panel = byId("receipt")
  const receipt = await get<Receipt>(forAccount(`/v1/receipts/${encodeURIComponent(id)}`))
  panel.replaceChildren(
    el("h3", `Receipt ${receipt.id}`),
    el("p", `${time(receipt.created_at)} · ${receipt.model} · ${receipt.privacy_class}`),
    el("p", `Cost ${usd(receipt.cost.total_usd)} (upstream ${usd(receipt.cost.upstream_usd)}, margin ${usd(receipt.cost.margin_usd)}); ` +
      `held ${usd(receipt.reservation.estimated_usd)}; balance after ${usd(receipt.balance_after_usd)}`),
    el("p", `Tokens ${receipt.usage.input_tokens} in, ${receipt.usage.output_tokens} out`),
    el("p", `Attempts: ${receipt.attempts.map((attempt) => `${attempt.model} ${attempt.outcome} ${attempt.latency_ms} ms`).join(" → ")}`)
  )
  panel.hidden = false
  panel.focus()
}

const renderRecent = (calls: ReadonlyArray<UsageCall>) =>
  table(byId("recent"), "The last calls billed", ["When", "Model", "Class", "Tokens", "Cost", "Receipt"], calls.map((call) => {
    const open = el("button", call.receipt_id, { type: "button", class: "link" })
    open.addEventListener("click", () => void openReceipt(call.receipt_id).catch(report))
    return [time(call.created_at), call.model, call.privacy_class, `${call.input_tokens} / ${call.output_tokens}`, usd(call.cost_usd), open]
  }))

const eventRow = (event: LogEvent) => [time(event.created_at), event.type, event.receipt_id ?? "", JSON.stringify(event.data)]

const loadLog = async (more: boolean) => {
  const type = (byId<HTMLSelectElement>("log-type")).value
  const query = new URLSearchParams({ limit: "20", ...(type === "" ? {} : { type }), ...(more && logCursor !== null ? { cursor: logCursor } : {}) })
  const page = await get<Page<LogEvent>>(forAccount(`/v1/logs?${query}`))
  if (more) appendRows(byId("log"), page.data.map(eventRow))
  else table(byId("log"), "Newest first", ["When", "Type", "Receipt", "Data"], page.data.map(eventRow))
  logCursor = page.next_cursor
  byId("log-more").hidden = !page.has_more
}

const report = (error: unknown) => {
  byId("status").textContent = refusalText(error)
  if (error instanceof ApiRefusal && error.status === 401) signOut(refusalText(error))
}

const refresh = async () => {
  const window = byId<HTMLSelectElement>("window").value
  const [summary, usage] = await Promise.all([
    get<Summary>(forAccount(`/v1/monitoring?window=${window}`)),
    get<Page<UsageCall>>(forAccount("/v1/usage?limit=10"))
  ])
  renderSummary(summary)
  renderRecent(usage.data)
  byId("status").textContent = `Account ${summary.account_id} · updated ${new Date().toLocaleTimeString()}`
}

const poll = () => {
  window.clearTimeout(timer)
  timer = window.setTimeout(async () => {
    if (document.visibilityState === "visible" && storedKey() !== null) await refresh().catch(report)
    if (storedKey() !== null) poll()
  }, POLL_MS)
}

const signIn = async (key: string) => {
  // Checked before it is kept: a wrong key is never stored. An admin key reads every account.
  const caller = await get<{ account_id: string | null; scopes: ReadonlyArray<string> }>("/v1/key", key)
  const admin = caller.scopes.includes("admin")
  if (!admin && !caller.scopes.includes("monitoring")) {
    throw new MissingScope()
  }
  storeKey(key)
  show(true)
  byId("admin").hidden = !admin
  byId("account-chooser").hidden = !admin
  if (admin) await loadAccounts()
  else selectAccount(null)
  // Agents are read with the key's own account: shown to a key of an account with the agents scope.
  const agents = caller.account_id !== null && caller.scopes.includes("agents")
  byId("agents-section").hidden = !agents
  await Promise.all([
    refresh(),
    loadLog(false),
    admin ? loadKeys() : Promise.resolve(),
    agents ? loadAgents(report) : Promise.resolve()
  ])
  poll()
}

/** Another account chosen (or credit added): everything read again. */
const reload = () => {
  byId("receipt").hidden = true
  void Promise.all([loadAccounts(), refresh(), loadLog(false), loadKeys()]).catch(report)
}

const signOut = (message = "") => {
  forgetKey()
  selectAccount(null)
  window.clearTimeout(timer)
  show(false)
  byId("login-error").textContent = message
}

byId<HTMLFormElement>("login").addEventListener("submit", (event) => {
  event.preventDefault()
  const input = byId<HTMLInputElement>("key")
  byId("login-error").textContent = ""
  signIn(input.value.trim()).then(() => (input.value = "")).catch((error) => {
    byId("login-error").textContent = refusalText(error)
  })
})
byId("logout").addEventListener("click", () => signOut())
wireAdmin(reload)
byId("window").addEventListener("change", () => void refresh().catch(report))
byId("log-type").addEventListener("change", () => void loadLog(false).catch(report))
byId("log-more").addEventListener("click", () => void loadLog(true).catch(report))
document.addEventListener("visibilitychange", () => {
  if (document.visibilityState === "visible" && storedKey() !== null) void refresh().catch(report)
})

const key = storedKey()
if (key === null) show(false)
else void signIn(key).catch((error) => signOut(refusalText(error)))
