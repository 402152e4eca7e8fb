/**
 * The gateway as a newcomer has it after `npm install && npm start`: no
 * config file (the built-in sandbox catalogue), a funded account and a key
 * with the chat, agents and monitoring scopes. The client-matrix tests (test/clients/) drive it with popular SDKs.
 */
import { startGateway, type TestGateway } from "./gateway.ts"

export interface DefaultInstall {
  readonly gateway: TestGateway
  /** `http://127.0.0.1:<port>/v1`, what every SDK takes as its base URL. */
  readonly baseURL: string
  readonly key: string
  readonly accountId: string
  /** The account's balance in USD (a decimal string), read through the operator API. */
  readonly balance: () => Promise<string>
}

export const startDefaultInstall = async (credit = "10"): Promise<DefaultInstall> => {
  const gateway = await startGateway()
  const { id, key } = await gateway.account({ credit, scopes: ["chat", "agents", "monitoring"] })
  return {
    gateway,
    baseURL: `${gateway.url}/v1`,
    key,
    accountId: id,
    balance: async () => (await gateway.request("GET", `/v1/admin/accounts/${id}`)).body.balance_usd
  }
}
