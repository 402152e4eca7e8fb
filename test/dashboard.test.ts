/**
 * The dashboard in a real browser (Debian's Chromium through playwright-core):
 * log in with a key, see the balance drop after a chat call, open its
 * receipt, page the event log, a wrong key's 401; an admin key's accounts,
 * keys (made, revoked) and credits; a key's agents; no console errors, no
 * request leaving the gateway's origin, the page's CSP; an axe-core scan
 * with no serious violations; screenshots at 375 and 1440 px wide saved to
 * test-artifacts/. Skipped, saying why, where no Chromium can be had
 * (`.ci/run` installs it).
 */
import { existsSync, mkdirSync, readFileSync } from "node:fs"
import { createRequire } from "node:module"
import { join } from "node:path"
import { type Browser, chromium, type Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startGateway, type TestGateway } from "./support/gateway.ts"

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium"
const available = existsSync(CHROMIUM)
if (!available) console.warn(`dashboard browser tests skipped: no Chromium at ${CHROMIUM} (apt-get install chromium, or set CHROMIUM_PATH)`)

const ARTIFACTS = join(import.meta.dirname, "..", "test-artifacts")
const AXE = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8")

let gateway: TestGateway
let browser: Browser
let account: { id: string; key: string }

beforeAll(async () => {
  if (!available) return
  gateway = await startGateway()
  account = await gateway.account({ credit: "5", scopes: ["chat", "monitoring"] })
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] })
}, 120_000)
afterAll(async () => {
  await browser?.close()
  await gateway?.close()
})

/** A page with its console errors and the origins it asked. */
const open = async (width: number, options: { readonly bypassCSP?: boolean } = {}) => {
  // The accessibility scan injects axe-core as a script of its own, which the page's CSP rightly refuses.
  const page = await browser.newPage({ viewport: { width, height: 900 }, bypassCSP: options.bypassCSP ?? false })
  const problems: Array<string> = []
  const origins = new Set<string>()
  page.on("console", (message) => message.type() === "error" && problems.push(message.text()))
  page.on("pageerror", (error) => problems.push(error.message))
  page.on("request", (request) => origins.add(new URL(request.url()).origin))
  await page.goto(`${gateway.url}/dashboard`)
  return { page, problems, origins }
}

const logIn = async (page: Page, key: string) => {
  await page.getByLabel("API key").fill(key)
  await page.getByRole("button", { name: "Open" }).click()
}

const balance = (page: Page) => page.locator("#payment div").filter({ hasText: "Balance" }).locator("dd").textContent()

describe.skipIf(!available)("dashboard (Chromium)", () => {
  it("shows the balance drop after a call, opens its receipt, and pages the event log", async () => {
    const { page, problems, origins } = await open(1440)
    const answer = await page.request.get(`${gateway.url}/dashboard`)
    expect(answer.headers()["content-security-policy"]).toContain("default-src 'none'")
    await logIn(page, account.key)
    await expect.poll(() => balance(page)).toBe("$5.00")
    const chat = await gateway.request("POST", "/v1/chat/completions", {
      key: account.key,
      body: { model: "svc/swift", messages: [{ role: "user", content: "hello" }] }
    })
    expect(chat.status).toBe(200)
    const receiptId = chat.headers.get("x-svc-receipt-id")!
    // The next poll (every 5 s) shows the new balance and the call.
    await expect.poll(() => balance(page), { timeout: 15_000 }).not.toBe("$5.00")
    const after = await balance(page)
    const receipt = (await gateway.request("GET", `/v1/receipts/${receiptId}`, { key: account.key })).body
    expect(after).toBe(`$${receipt.balance_after_usd.replace(/0+$/, "")}`)
    await page.getByRole("button", { name: receiptId }).click()
    await expect.poll(() => page.locator("#receipt h3").textContent()).toBe(`Receipt ${receiptId}`)
    expect(await page.locator("#receipt").textContent()).toContain("svc/swift")
    // The log pages 20 at a time: a call's events and the account's exceed one page after a few calls.
    for (let i = 0; i < 4; i++) {
      await gateway.request("POST", "/v1/chat/completions", {
        key: account.key,
        body: { model: "svc/swift", messages: [{ role: "user", content: `hello ${i}` }] }
      })
    }
    await page.getByLabel("Type").selectOption("")
    await expect.poll(() => page.locator("#log tbody tr").count(), { timeout: 10_000 }).toBe(20)
    await page.getByRole("button", { name: "Older events" }).click()
    await expect.poll(() => page.locator("#log tbody tr").count()).toBeGreaterThan(20)
    mkdirSync(ARTIFACTS, { recursive: true })
    await page.screenshot({ path: join(ARTIFACTS, "dashboard-1440.png"), fullPage: true })
    await page.evaluate(() => (globalThis as any).scrollTo(0, 0))
    await page.screenshot({ path: join(ARTIFACTS, "dashboard-1440-top.png") })
    expect(problems).toEqual([])
    expect([...origins]).toEqual([gateway.url])
    await page.close()
  }, 60_000)

  it("is readable at 375 px, keyboard-reachable and has no serious accessibility violations", async () => {
    const { page, problems } = await open(375, { bypassCSP: true })
    // The login form by keyboard alone.
    await page.keyboard.press("Tab")
    await page.keyboard.press("Tab")
    expect(await page.evaluate(() => (globalThis as any).document.activeElement?.id)).toBe("key")
    await page.keyboard.type(account.key)
    await page.keyboard.press("Enter")
    await expect.poll(() => page.locator("#board").isVisible()).toBe(true)
    await expect.poll(() => page.locator("#recent tbody tr").count()).toBeGreaterThan(0)
    const scrollWidth = await page.evaluate(() => (globalThis as any).document.documentElement.scrollWidth)
    expect(scrollWidth).toBeLessThanOrEqual(375)
    await page.addScriptTag({ content: AXE })
    const violations = await page.evaluate(async () => {
      const scope = globalThis as any
      const result = await scope.axe.run(scope.document, { resultTypes: ["violations"] })
      return result.violations.map((violation: any) => ({
        id: violation.id,
        impact: violation.impact,
        nodes: violation.nodes.slice(0, 3).map((node: any) => node.html.slice(0, 120))
      }))
    })
    expect(violations.filter((violation: any) => violation.impact === "serious" || violation.impact === "critical")).toEqual([])
    mkdirSync(ARTIFACTS, { recursive: true })
    await page.screenshot({ path: join(ARTIFACTS, "dashboard-375.png"), fullPage: true })
    expect(problems).toEqual([])
    await page.close()
  }, 60_000)

  it("lets an admin key choose an account, make a key (shown once), revoke it, and add credit", async () => {
    const { page, problems } = await open(1440)
    await logIn(page, gateway.adminKey)
    await expect.poll(() => page.locator("#admin").isVisible()).toBe(true)
    await page.getByLabel("Account", { exact: true }).selectOption(account.id)
    await expect.poll(() => page.locator("#status").textContent()).toContain(account.id)
    await expect.poll(() => page.locator("#accounts").textContent()).toContain(account.id)
    await page.getByLabel("New key's name").fill("from-dashboard")
    await page.getByRole("button", { name: "Create key" }).click()
    await expect.poll(() => page.locator("#new-secret").textContent()).toMatch(/svc_live_[0-9A-Za-z]{40}/)
    const secret = (await page.locator("#new-secret").textContent())!.match(/svc_live_[0-9A-Za-z]{40}/)![0]
    const row = page.locator("#keys tr").filter({ hasText: "from-dashboard" })
    await expect.poll(() => row.textContent()).toContain("active")
    await row.getByRole("button").click()
    await expect.poll(() => row.textContent()).toContain("revoked")
    expect((await gateway.request("GET", "/v1/models", { key: secret })).status).toBe(401)
    const before = (await gateway.request("GET", `/v1/admin/accounts/${account.id}`, {})).body.balance_usd
    await page.getByLabel("Credit (USD)").fill("2.5")
    await page.getByLabel("Reference").fill("dashboard-test")
    await page.getByRole("button", { name: "Add credit" }).click()
    await expect.poll(async () => (await gateway.request("GET", `/v1/admin/accounts/${account.id}`, {})).body.balance_usd)
      .not.toBe(before)
    await expect.poll(() => page.locator("#admin-status").textContent()).toContain("dashboard-test")
    expect(problems).toEqual([])
    await page.close()
  }, 60_000)

  it("lists a key's agents with their documents and conversations", async () => {
    const owner = await gateway.account({ credit: "5", scopes: ["chat", "monitoring", "agents"] })
    const agent = await gateway.request("POST", "/v1/agents", {
      key: owner.key,
      body: { name: "Support", instructions: "Answer from the documents." }
    })
    expect(agent.status).toBe(200)
    const document = await gateway.request("POST", `/v1/agents/${agent.body.id}/documents`, {
      key: owner.key,
      body: { title: "Refunds", text: "Refunds are paid within five days of a request." }
    })
    expect(document.status).toBe(200)
    const { page, problems } = await open(1440)
    await logIn(page, owner.key)
    const row = page.locator("#agents tr").filter({ hasText: "Support" })
    await expect.poll(() => row.textContent()).toContain("0 of 1000")
    await row.getByRole("button", { name: "Support" }).click()
    await expect.poll(() => page.locator("#documents").textContent()).toContain("Refunds")
    expect(problems).toEqual([])
    await page.close()
  }, 60_000)

  it("says a wrong key was refused, and keeps nothing", async () => {
    const { page } = await open(1440)
    await logIn(page, "svc_live_wrongwrongwrong")
    await expect.poll(() => page.locator("#login-error").textContent()).toContain("401")
    expect(await page.evaluate(() => (globalThis as any).sessionStorage.length)).toBe(0)
    expect(await page.locator("#board").isVisible()).toBe(false)
    await page.close()
  }, 60_000)
})
