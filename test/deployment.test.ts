/**
 * The deployment files, read as Docker would: the Dockerfile builds dist/
 * from sources that exist and runs it as a non-root user on 0.0.0.0 with a
 * liveness HEALTHCHECK, beside the one package the bundle loads (the bundle
 * is started here with that package alone); compose.yaml runs PostgreSQL (healthchecked) and two
 * gateway replicas on it with one operator key, started only once the
 * database is healthy, with a stop timeout above the drain. The image itself
 * is built only where a Docker daemon answers (this machine has only the
 * client); the command it runs is started without Docker by
 * test/serverProcess.test.ts.
 */
import { execFileSync, spawn } from "node:child_process"
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { parse } from "yaml"
import { describe, expect, it } from "vitest"
import { GATEWAY_NODE_FLAGS, withGatewayFlags } from "../src/start/nodeFlags.ts"
import { freePort } from "./support/gatewayProcess.ts"

/** Dockerfile instructions as [KEYWORD, arguments], continuation lines joined, comments dropped. */
const instructions = (text: string): Array<[string, string]> =>
  text
    .replace(/\\\n/g, " ")
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line !== "" && !line.startsWith("#"))
    .map((line) => {
      const [keyword, ...rest] = line.split(/\s+/)
      return [keyword!.toUpperCase(), rest.join(" ")]
    })

const dockerfile = instructions(readFileSync("Dockerfile", "utf8"))
/** The instructions of the last stage: what the image runs. */
const finalStage = dockerfile.slice(dockerfile.map(([keyword]) => keyword).lastIndexOf("FROM"))
const ofFinal = (keyword: string) => finalStage.filter(([name]) => name === keyword).map(([, args]) => args)

const dockerAvailable = (() => {
  try {
    execFileSync("docker", ["info"], { stdio: "ignore", timeout: 10_000 })
    return true
  } catch {
    return false
  }
})()

describe("the gateway's Node flags", () => {
  it("npm start passes them, as the image does (V8 reads them only from the command line)", () => {
    const { scripts } = JSON.parse(readFileSync("package.json", "utf8"))
    expect(scripts.start).toBe(`exec node --enable-source-maps ${GATEWAY_NODE_FLAGS.join(" ")} dist/main.js`)
  })

  it("are added to a command line that lacks them, and never twice", () => {
    expect(withGatewayFlags(["--import", "tsx"])).toEqual(["--import", "tsx", ...GATEWAY_NODE_FLAGS])
    expect(withGatewayFlags(["--max-semi-space-size=64"])).toEqual(["--max-semi-space-size=64", "--no-allocation-site-pretenuring"])
    // An operator's own choice of a boolean flag, set either way or spelt with underscores, is kept.
    expect(withGatewayFlags(["--allocation_site_pretenuring", "--max_semi_space_size=8"]))
      .toEqual(["--allocation_site_pretenuring", "--max_semi_space_size=8"])
    expect(withGatewayFlags(GATEWAY_NODE_FLAGS)).toEqual([...GATEWAY_NODE_FLAGS])
  })
})

describe("Dockerfile", () => {
  it("builds on node:20-slim and runs the bundle with node as an unprivileged user", () => {
    expect(dockerfile.filter(([keyword]) => keyword === "FROM").every(([, image]) => image.startsWith("node:20-slim"))).toBe(true)
    expect(ofFinal("USER")).toEqual(["node"])
    expect(JSON.parse(ofFinal("CMD")[0]!)).toEqual(["node", "--enable-source-maps", ...GATEWAY_NODE_FLAGS, "dist/main.js"])
    expect(ofFinal("ENV").join(" ")).toMatch(/HOST=0\.0\.0\.0/)
    expect(ofFinal("EXPOSE")).toEqual(["8080"])
    expect(ofFinal("STOPSIGNAL")).toEqual(["SIGTERM"])
  })

  it("checks liveness on /healthz with node itself (slim has no curl)", () => {
    const [check] = ofFinal("HEALTHCHECK")
    expect(check).toMatch(/CMD \["node", "-e", .*\/healthz/)
    expect(check).not.toMatch(/curl|wget/)
  })

  it("copies into the build only files that exist, and into the image only the bundle and its packages", () => {
    const copies = dockerfile.filter(([keyword]) => keyword === "COPY")
    for (const [, args] of copies.filter(([, args]) => !args.startsWith("--from"))) {
      const sources = args.split(/\s+/).slice(0, -1)
      for (const source of sources) expect(existsSync(source), source).toBe(true)
    }
    expect(ofFinal("COPY").map((args) => args.split(/\s+/)[1])).toEqual([
      "/app/package.json",
      "/app/node_modules/@electric-sql/pglite",
      "/app/node_modules/@electric-sql/pglite-pgvector",
      "/app/dist"
    ])
    expect(dockerfile.some(([keyword, args]) => keyword === "RUN" && args === "npm run build")).toBe(true)
  })

  it("copies all the bundle needs: it serves with no other package than PGlite and its pgvector beside it", async () => {
    // What the image holds, laid out in a directory: dist/ (with the word vectors) and the two PGlite packages.
    const image = mkdtempSync(join(tmpdir(), "svc-image-"))
    cpSync("dist", join(image, "dist"), { recursive: true })
    mkdirSync(join(image, "node_modules/@electric-sql"), { recursive: true })
    for (const name of ["pglite", "pglite-pgvector"]) {
      symlinkSync(resolve(`node_modules/@electric-sql/${name}`), join(image, `node_modules/@electric-sql/${name}`))
    }
    writeFileSync(join(image, "package.json"), readFileSync("package.json"))
    const port = await freePort()
    const server = spawn(process.execPath, ["dist/main.js"], {
      cwd: image,
      env: { PATH: process.env.PATH, HOST: "127.0.0.1", PORT: String(port), SVC_DATA_DIR: join(image, "data"), SVC_ADMIN_KEY: "k" },
      stdio: ["ignore", "pipe", "pipe"]
    })
    let output = ""
    server.stdout.on("data", (chunk) => output += chunk)
    server.stderr.on("data", (chunk) => output += chunk)
    try {
      const deadline = Date.now() + 90_000
      let ready = 0
      while (ready !== 200) {
        if (Date.now() > deadline || server.exitCode !== null) throw new Error(`the bundle did not serve:\n${output}`)
        ready = await fetch(`http://127.0.0.1:${port}/readyz`).then((answer) => answer.status, () => 0)
        if (ready !== 200) await new Promise<void>((wake) => setTimeout(wake, 200))
      }
      // The word vectors beside the bundle are found: a synonym lies nearer than an unrelated word.
      const call = (path: string, key: string, body: unknown) =>
        fetch(`http://127.0.0.1:${port}${path}`, {
          method: "POST",
          headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
          body: JSON.stringify(body)
        }).then((answer) => answer.json() as Promise<any>)
      const account = await call("/v1/admin/accounts", "k", { name: "image", credit_usd: "1" })
      const { key } = await call(`/v1/admin/accounts/${account.id}/keys`, "k", { scopes: ["chat"] })
      const embedded = await call("/v1/embeddings", key, { model: "svc/embed", input: ["automobile", "car", "soup"] })
      const [auto, car, soup] = embedded.data.map((item: any) => item.embedding as Array<number>)
      const dot = (a: Array<number>, b: Array<number>) => a.reduce((sum, x, i) => sum + x * b[i]!, 0)
      expect(dot(auto, car)).toBeGreaterThan(dot(auto, soup) + 0.1)
    } finally {
      server.kill("SIGTERM")
      await new Promise<void>((exited) => server.exitCode !== null ? exited() : server.once("exit", () => exited()))
      rmSync(image, { recursive: true, force: true })
    }
    expect(server.exitCode).toBe(0)
  }, 120_000)

  it("keeps local state and dependencies out of the build context", () => {
    const ignored = readFileSync(".dockerignore", "utf8").split("\n").map((line) => line.trim())
    for (const entry of ["node_modules", ".svc-data", "dist", ".git"]) expect(ignored).toContain(entry)
  })

  it.skipIf(!dockerAvailable)("builds the image (skipped: no Docker daemon answers on this machine)", () => {
    execFileSync("docker", ["build", "-q", "-t", "svc-gateway:test", "."], { stdio: "ignore", timeout: 600_000 })
  }, 600_000)
})

describe("compose.yaml", () => {
  // Merge keys (`<<: *gateway`) as Docker Compose reads them.
  const compose = parse(readFileSync("compose.yaml", "utf8"), { merge: true })
  const gateways = Object.entries<any>(compose.services).filter(([name]) => name !== "postgres")

  it("runs PostgreSQL with a healthcheck and a volume", () => {
    const postgres = compose.services.postgres
    expect(postgres.image).toMatch(/^postgres:1[5-9]/)
    expect(postgres.healthcheck.test.join(" ")).toContain("pg_isready")
    expect(postgres.volumes[0]).toMatch(/:\/var\/lib\/postgresql\/data$/)
  })

  it("runs two gateway replicas from the Dockerfile on that database, each on its own port, with one operator key", () => {
    expect(gateways).toHaveLength(2)
    const ports = new Set<string>()
    for (const [, gateway] of gateways) {
      expect(gateway.build).toBe(".")
      const { hostname, port } = new URL(gateway.environment.DATABASE_URL)
      expect([hostname, port]).toEqual(["postgres", "5432"])
      expect(gateway.environment.SVC_ADMIN_KEY).toMatch(/^\$\{SVC_ADMIN_KEY:\?.+\}$/)
      expect(gateway.depends_on.postgres.condition).toBe("service_healthy")
      expect(Number.parseInt(gateway.stop_grace_period, 10)).toBeGreaterThan(25)
      for (const mapping of gateway.ports) ports.add(mapping.split(":").slice(0, -1).join(":"))
    }
    expect(ports.size).toBe(2)
  })
})
