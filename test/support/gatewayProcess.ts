/**
 * A real gateway process — `node dist/main.js`, what `npm start` runs (the
 * test run's global setup builds dist/ first) — for tests that need several processes on one database, or a process
 * that dies. It gets its own env and config file and a free loopback port,
 * and counts as started once it answers `GET /openapi.json`.
 *
 * The gateway is started as the leader of its own process group and every
 * signal goes to the whole group, so nothing it starts can outlive it.
 * Children that a test forgets are killed by `stopAllGatewayProcesses()`
 * (call it in `afterAll`) and, as a last resort, by a watchdog process when
 * the test worker dies.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { dirname, join, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import { GATEWAY_NODE_FLAGS } from "../../src/start/nodeFlags.ts"

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..")

export interface GatewayProcess {
  /** `http://127.0.0.1:<port>` */
  readonly url: string
  readonly port: number
  /** The gateway's process, leader of its process group. */
  readonly pid: number
  /** Sends `signal` to the process group and resolves once the process has exited. */
  readonly kill: (signal?: NodeJS.Signals) => Promise<void>
  /** SIGTERM, then SIGKILL if it has not exited after `graceMs`; resolves once it has exited. */
  readonly stop: (graceMs?: number) => Promise<void>
  /** Whether it is still running. */
  readonly running: () => boolean
  /** Resolves once it has exited, by itself or by a signal. */
  readonly exited: Promise<void>
  /** Its exit code once it has exited (null: still running, or ended by a signal). */
  readonly exitCode: () => number | null
  /** Its stdout and stderr so far (the last 256 KiB), for failure messages. */
  readonly output: () => string
}

export interface GatewayProcessOptions {
  /**
   * The database and anything else: `DATABASE_URL` (PostgreSQL) or
   * `SVC_DATA_DIR` (PGlite) must be among them, so that no test ever opens the
   * default data directory. PORT and HOST are set here; SVC_WORKERS is 1
   * unless given (a test of one process means one, on PostgreSQL too).
   */
  readonly env: Record<string, string>
  /** The config file's content; `{}` (the built-in default) when omitted. */
  readonly config?: unknown
  /** How long it may take to answer `/openapi.json`. */
  readonly readyTimeoutMs?: number
  /** Node's flags for the process: the gateway's own (`npm start`'s) unless given. */
  readonly nodeFlags?: ReadonlyArray<string>
}

const live = new Set<ChildProcess>()

const signalGroup = (child: ChildProcess, signal: NodeJS.Signals) => {
  if (child.pid === undefined) return
  try {
    process.kill(-child.pid, signal)
  } catch {
    // Already gone.
  }
}

const groupAlive = (pid: number) => {
  try {
    process.kill(-pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM"
  }
}

/** Waits until no process of the group is left. */
const groupGone = async (child: ChildProcess) => {
  if (child.pid === undefined) return
  const deadline = Date.now() + 10_000
  while (groupAlive(child.pid)) {
    if (Date.now() > deadline) throw new Error(`process group ${child.pid} is still alive after SIGKILL`)
    signalGroup(child, "SIGKILL")
    await new Promise<void>((wake) => setTimeout(wake, 20))
  }
}

/**
 * A tiny detached process that SIGKILLs the gateway's group once its stdin
 * closes: when the gateway has exited, or when the test worker itself dies
 * (vitest may end a worker by signal, and then no exit hook runs here).
 */
const startWatchdog = (pgid: number) => {
  const script = `
    const kill = () => { try { process.kill(-${pgid}, "SIGKILL") } catch {} process.exit(0) }
    process.stdin.on("end", kill).on("error", kill).on("close", kill).resume()`
  const watchdog = spawn(process.execPath, ["-e", script], { detached: true, stdio: ["pipe", "ignore", "ignore"] })
  watchdog.on("error", () => {})
  watchdog.stdin!.on("error", () => {})
  // Neither may keep the test worker alive.
  watchdog.unref()
  ;(watchdog.stdin as unknown as { unref?: () => void }).unref?.()
  return watchdog
}

let exitHookInstalled = false
const installExitHook = () => {
  if (exitHookInstalled) return
  exitHookInstalled = true
  // Synchronous, so it also runs when the worker exits without cleaning up.
  process.once("exit", () => {
    for (const child of live) signalGroup(child, "SIGKILL")
  })
}

/** A port nothing listens on right now (the kernel's choice for port 0). */
export const freePort = () =>
  new Promise<number>((resolvePort, reject) => {
    const server = createServer()
    server.unref()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      server.close(() => typeof address === "object" && address !== null ? resolvePort(address.port) : reject(new Error("no port")))
    })
  })

/** Variables of the test runner's own environment that must not leak into a gateway. */
const inheritedOut = /^(PORT|HOST|DATABASE_URL|REDIS_URL|NODE_OPTIONS|VITEST.*|SVC_.*)$/

const sleep = (ms: number) => new Promise<void>((wake) => setTimeout(wake, ms))

/** The line a gateway writes once it listens (src/main.ts). */
const LISTENING = /svc listening on /

const startOnce = async (options: GatewayProcessOptions, configPath: string, port: number) => {
  const env: Record<string, string> = {}
  for (const [name, value] of Object.entries(process.env)) {
    if (value !== undefined && !inheritedOut.test(name)) env[name] = value
  }
  Object.assign(env, { SVC_WORKERS: "1" }, options.env, { PORT: String(port), HOST: "127.0.0.1", SVC_CONFIG: configPath })

  installExitHook()
  const child = spawn(process.execPath, ["--enable-source-maps", ...(options.nodeFlags ?? GATEWAY_NODE_FLAGS), "dist/main.js"], {
    cwd: root,
    env,
    detached: true,
    stdio: ["ignore", "pipe", "pipe"]
  })
  live.add(child)
  const watchdog = child.pid === undefined ? undefined : startWatchdog(child.pid)
  let output = ""
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString("utf8")).slice(-256 * 1024)
  }
  child.stdout!.on("data", keep)
  child.stderr!.on("data", keep)
  const exited = new Promise<void>((done) => {
    const finish = () => {
      live.delete(child)
      // Whatever is left of the group goes with the watchdog.
      watchdog?.stdin?.end()
      done()
    }
    if (child.exitCode !== null || child.signalCode !== null) return finish()
    // "close": the process has exited and its output has been read to the end.
    child.once("close", finish)
    child.once("error", (error) => {
      keep(Buffer.from(`\nspawn failed: ${error.message}\n`))
      finish()
    })
  })
  const running = () => live.has(child)
  const url = `http://127.0.0.1:${port}`

  const kill = async (signal: NodeJS.Signals = "SIGKILL") => {
    if (!running()) return
    signalGroup(child, signal)
    await exited
    if (signal === "SIGKILL") await groupGone(child)
  }
  const stop = async (graceMs = 10_000) => {
    if (!running()) return
    signalGroup(child, "SIGTERM")
    const timer = setTimeout(() => signalGroup(child, "SIGKILL"), graceMs)
    await exited
    clearTimeout(timer)
    // Nothing of the group may stay behind.
    await groupGone(child)
  }

  const deadline = Date.now() + (options.readyTimeoutMs ?? 90_000)
  while (true) {
    if (!running()) return { ready: false as const, output }
    try {
      const response = await fetch(`${url}/openapi.json`, { signal: AbortSignal.timeout(2_000) })
      await response.arrayBuffer()
      if (response.status === 200) break
    } catch {
      // Not listening yet.
    }
    if (Date.now() > deadline) {
      await kill("SIGKILL")
      throw new Error(`the gateway did not answer ${url}/openapi.json in time; its output:\n${output}`)
    }
    await sleep(100)
  }
  // Serving comes before its start-up lines have all come through the pipe (logs go out once a turn):
  // wait a moment for the line that says it listens, so that `output()` has the whole start.
  const linesBy = Date.now() + 5_000
  while (!LISTENING.test(output) && running() && Date.now() < linesBy) await sleep(20)

  const handle: GatewayProcess = {
    url,
    port,
    pid: child.pid!,
    kill,
    stop,
    running,
    exited,
    exitCode: () => child.exitCode,
    output: () => output
  }
  return { ready: true as const, handle }
}

/** Starts a gateway process and resolves once it serves; rejects with its output if it does not. */
export const startGatewayProcess = async (options: GatewayProcessOptions): Promise<GatewayProcess> => {
  if (!options.env.DATABASE_URL && !options.env.SVC_DATA_DIR) {
    throw new Error("startGatewayProcess: give DATABASE_URL or SVC_DATA_DIR in env")
  }
  const dir = mkdtempSync(join(tmpdir(), "svc-test-process-"))
  const configPath = join(dir, "svc.config.json")
  writeFileSync(configPath, JSON.stringify(options.config ?? {}))
  const removeConfig = () => rmSync(dir, { recursive: true, force: true })
  let last = ""
  // The port is free when chosen but may be taken before the gateway binds it: then try another.
  for (let attempt = 0; attempt < 3; attempt++) {
    const started = await startOnce(options, configPath, await freePort()).catch((error) => {
      removeConfig()
      throw error
    })
    if (started.ready) {
      // Kept while it runs: a worker started later (SVC_WORKERS) reads it too.
      void started.handle.exited.then(removeConfig)
      return started.handle
    }
    last = started.output
    // The gateway says so in its own words (src/start/failureLines.ts); the raw code, in case it does not.
    if (!last.includes("the port is in use") && !last.includes("EADDRINUSE")) break
  }
  removeConfig()
  throw new Error(`the gateway process exited before serving; its output:\n${last}`)
}

/** Stops every gateway process this worker started that is still running (for `afterAll`). */
export const stopAllGatewayProcesses = async () => {
  const stops: Array<Promise<void>> = []
  for (const child of [...live]) {
    signalGroup(child, "SIGKILL")
    stops.push(
      new Promise<void>((done) => {
        if (child.exitCode !== null || child.signalCode !== null) return done()
        child.once("exit", () => done())
      }).then(() => groupGone(child))
    )
  }
  await Promise.all(stops)
}
