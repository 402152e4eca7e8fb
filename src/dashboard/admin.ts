/**
 * What an admin key adds: every account with its balance, one chosen to look
 * at (the rest of the page then reads it with `accountId`), its keys — a new
 * key's secret shown once, revoking — and credits with a reference.
 */
import { type Account, type ApiKey, get, type Page, selectAccount, selectedAccount, send } from "./api.ts"
import { byId, el, table, usd } from "./render.ts"

/** The accounts, newest first; the first is chosen unless one already is. */
export const loadAccounts = async () => {
  const accounts = await get<Page<Account>>("/v1/admin/accounts?limit=1000")
  const chooser = byId<HTMLSelectElement>("account")
  chooser.replaceChildren(...accounts.data.map((account) => el("option", `${account.name} (${account.id})`, { value: account.id })))
  if (selectedAccount() === null && accounts.data.length > 0) selectAccount(accounts.data[0]!.id)
  chooser.value = selectedAccount() ?? ""
  table(byId("accounts"), "Every account, newest first", ["Account", "Name", "Balance", "Held"], accounts.data.map((account) => [
    account.id,
    account.name,
    usd(account.balance_usd),
    usd(account.reserved_usd)
  ]))
}

export const loadKeys = async () => {
  const accountId = selectedAccount()
  if (accountId === null) return
  const keys = await get<Page<ApiKey>>(`/v1/admin/accounts/${encodeURIComponent(accountId)}/keys?limit=1000`)
  table(byId("keys"), "The chosen account's keys", ["Key", "Name", "Scopes", "State", ""], keys.data.map((key) => {
    const revoke = el("button", `Revoke ${key.hint}`, { type: "button" })
    revoke.disabled = key.revoked_at !== null
    revoke.addEventListener("click", () =>
      void send("DELETE", `/v1/admin/keys/${encodeURIComponent(key.id)}`).then(loadKeys).catch(say))
    return [key.hint + "…", key.name ?? "", key.scopes.join(", "), key.revoked_at === null ? "active" : "revoked", revoke]
  }))
}

const say = (error: unknown) => void (byId("admin-status").textContent = error instanceof Error ? error.message : String(error))

export const wireAdmin = (changed: () => void) => {
  byId<HTMLSelectElement>("account").addEventListener("change", (event) => {
    selectAccount((event.target as HTMLSelectElement).value)
    changed()
  })
  byId<HTMLFormElement>("new-key").addEventListener("submit", (event) => {
    event.preventDefault()
    const form = event.target as HTMLFormElement
    const scopes = ["chat", "agents", "monitoring"].filter((scope) => (form.elements.namedItem(scope) as HTMLInputElement).checked)
    const name = (form.elements.namedItem("key-name") as HTMLInputElement).value
    send<{ key: string }>("POST", `/v1/admin/accounts/${encodeURIComponent(selectedAccount() ?? "")}/keys`, { name, scopes })
      .then((created) => {
        // Shown this once: the gateway keeps only its hash.
        byId("new-secret").textContent = `New key (copy it now, it is not shown again): ${created.key}`
        return loadKeys()
      })
      .catch(say)
  })
  byId<HTMLFormElement>("credit").addEventListener("submit", (event) => {
    event.preventDefault()
    const form = event.target as HTMLFormElement
    const amount = (form.elements.namedItem("amount") as HTMLInputElement).value
    const reference = (form.elements.namedItem("reference") as HTMLInputElement).value
    send("POST", `/v1/admin/accounts/${encodeURIComponent(selectedAccount() ?? "")}/credits`, { amount_usd: amount, reference })
      .then(() => {
        byId("admin-status").textContent = `Added $${amount} (${reference}).`
        changed()
      })
      .catch(say)
  })
}
