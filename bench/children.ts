/** Child processes of a benchmark: started with our TypeScript loader, talked to over IPC, all remembered so they can be ended. */
import { type ChildProcess, fork } from "node:child_process"
import { fileURLToPath } from "node:url"
import type { Job, Result } from "./load.ts"

export const children: Array<ChildProcess> = []

/** Where a bench sends its load: a server's address and key (or keys, one account each, taken in turn). */
export type LoadTarget = { readonly url: string; readonly key?: string; readonly keys?: ReadonlyArray<string> }

/** A bench server (bench/servers.ts) as its parent holds it, and how a bench starts one. */
export type Server = LoadTarget & { readonly child: ChildProcess }
export type StartServer = (args: Array<string>, execArgv?: Array<string>) => Promise<Server>

/**
 * How a bench process loads TypeScript: as the shipped build compiles it (typescript.mjs), or, with
 * `BENCH_LOADER=tsx`, under tsx as the sessions before 24 measured (its `keepNames` costs every
 * closure made per call an `Object.defineProperty`).
 */
export const typescriptLoader = process.env.BENCH_LOADER === "tsx"
  ? ["--import", "tsx"]
  : ["--import", fileURLToPath(new URL("./typescript.mjs", import.meta.url))]

/** Node flags for a `--cpu-prof` profile of a bench process, written to `BENCH_CPU_PROF` when that is set. */
export const cpuProfileFlags = process.env.BENCH_CPU_PROF ? ["--cpu-prof", `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : []

export const spawnChild = (
  file: string,
  args: Array<string> = [],
  env: Record<string, string> = {},
  execArgv: Array<string> = []
) => {
  const child = fork(file, args, {
    execArgv: [...typescriptLoader, ...execArgv],
    env: { ...process.env, ...env },
    stdio: ["ignore", "inherit", "inherit", "ipc"]
  })
  children.push(child)
  return watched(child, [file.split("/").at(-1)!, ...args].join(" "))
}

/**
 * A child that dies before it is told to stop (or killed) says so, with its exit code or signal,
 * and a message sent to it afterwards is lost instead of crashing the bench (its channel closed):
 * the bench then fails where it waits for that child, naming it, not with a bare
 * `ERR_IPC_CHANNEL_CLOSED`.
 */
export const watched = (child: ChildProcess, name: string) => {
  let told = false
  const send = child.send.bind(child)
  child.send = ((message: any, ...rest: Array<any>) => {
    if (message === "stop") told = true
    return child.connected ? send(message, ...rest) : false
  }) as ChildProcess["send"]
  const kill = child.kill.bind(child)
  child.kill = (signal?: NodeJS.Signals | number) => {
    told = true
    return kill(signal)
  }
  child.on("error", (error) => console.error(`bench: ${name}: ${error.message}`))
  child.once("exit", (code, signal) => {
    if (!told) console.error(`bench: ${name} exited before it was told to stop (${signal ?? `code ${code}`})`)
  })
  return child
}

/** The next IPC message carrying `key`; fails if the child exits first. */
export const nextMessage = <A>(child: ChildProcess, key: string) =>
  new Promise<A>((resolve, reject) => {
    const onExit = (code: number | null) => reject(new Error(`a bench process exited early (${code})`))
    child.once("exit", onExit)
    const onMessage = (message: any) => {
      if (message?.[key] === undefined) return
      child.off("message", onMessage).off("exit", onExit)
      resolve(message[key])
    }
    child.on("message", onMessage)
  })

export const median = (xs: ReadonlyArray<number>) => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length % 2 === 1 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2
}

/** The request bodies a bench sends: a JSON chat call and the same call streamed. */
export type Bodies = { readonly json: string; readonly stream: string }

/** One run of the load generator (bench/load.ts) against `server`: `concurrency` requests in flight for `seconds`. */
export const loadWith = (loader: ChildProcess) => (server: LoadTarget, body: string, concurrency: number, seconds: number) => {
  loader.send({ url: server.url, key: server.key, keys: server.keys, body, concurrency, seconds } satisfies Job)
  return nextMessage<Result>(loader, "result")
}

export type Load = ReturnType<typeof loadWith>
