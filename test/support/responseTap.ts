/**
 * Records what a gateway running in this test process sends back: status,
 * headers and body of every response on its port (fake upstreams on other
 * ports are ignored). The test gateway scans it when it closes, so every test
 * file that starts one checks that no caller ever saw an upstream's name.
 */
import { ServerResponse } from "node:http"
import { houseModels } from "../../layers/catalogue/houseModels.ts"

interface Tap {
  readonly texts: Array<string>
  /** Responses to these bearer keys are not recorded (operators may see provider names). */
  readonly skipKeys: ReadonlySet<string>
}

const taps = new Map<number, Tap>()
const bodies = new WeakMap<ServerResponse, Array<string>>()
/** Headers given to `writeHead` directly (they never show in `getHeaders()`). */
const heads = new WeakMap<ServerResponse, string>()

const tapOf = (res: ServerResponse) => {
  const port = res.req?.socket?.localPort
  return port === undefined ? undefined : taps.get(port)
}

const text = (chunk: unknown) =>
  typeof chunk === "string" ? chunk : chunk instanceof Uint8Array ? Buffer.from(chunk).toString("utf8") : ""

let installed = false
const install = () => {
  if (installed) return
  installed = true
  const writeHead = ServerResponse.prototype.writeHead
  ServerResponse.prototype.writeHead = function(this: ServerResponse, ...args: Array<any>) {
    if (tapOf(this) !== undefined) heads.set(this, JSON.stringify(args.slice(1)))
    return (writeHead as any).apply(this, args)
  } as any
  const write = ServerResponse.prototype.write
  const end = ServerResponse.prototype.end
  ServerResponse.prototype.write = function(this: ServerResponse, chunk: any, ...rest: Array<any>) {
    if (tapOf(this) !== undefined) {
      const parts = bodies.get(this) ?? []
      parts.push(text(chunk))
      bodies.set(this, parts)
    }
    return (write as any).call(this, chunk, ...rest)
  } as any
  ServerResponse.prototype.end = function(this: ServerResponse, chunk?: any, ...rest: Array<any>) {
    const tap = tapOf(this)
    const authorization = this.req?.headers.authorization?.replace(/^Bearer\s+/i, "")
    if (tap !== undefined && (authorization === undefined || !tap.skipKeys.has(authorization))) {
      const body = (bodies.get(this) ?? []).join("") + (typeof chunk === "function" ? "" : text(chunk))
      tap.texts.push(`${this.statusCode} ${JSON.stringify(this.getHeaders())} ${heads.get(this) ?? ""} ${body}`)
    }
    return (end as any).call(this, chunk, ...rest)
  } as any
}

/** Starts recording responses sent from `port`. */
export const tapResponses = (port: number, skipKeys: ReadonlySet<string>) => {
  install()
  const tap: Tap = { texts: [], skipKeys }
  taps.set(port, tap)
  return {
    texts: (): ReadonlyArray<string> => tap.texts,
    stop: () => void taps.delete(port)
  }
}

/** What must never reach an API consumer, read from a gateway's config and env. */
export const secretsOf = (config: any, env: Record<string, string | undefined>): ReadonlyArray<string> => {
  const secrets = new Set<string>()
  for (const provider of config?.providers ?? []) {
    if (provider.plugin !== "sandbox") secrets.add(provider.id)
    if (typeof provider.baseUrl === "string") secrets.add(new URL(provider.baseUrl).host)
    if (typeof provider.apiKeyEnv === "string" && env[provider.apiKeyEnv]) secrets.add(env[provider.apiKeyEnv]!)
    for (const deployment of provider.deployments ?? []) {
      if (typeof deployment.upstreamModel === "string") secrets.add(deployment.upstreamModel)
    }
  }
  // A name too short to be told apart from ordinary text, or one a model id contains (a provider
  // called "metered" serving svc/metered), cannot be scanned for; tests pick distinctive names.
  const modelIds = [...(config?.models ?? []).map((model: any) => String(model.id)), ...houseModels.map((model) => model.id)]
  return [...secrets].filter((secret) => secret.length >= 4 && !modelIds.some((id) => id.includes(secret)))
}
