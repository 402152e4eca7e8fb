import { it } from "vitest"
import { startGatewayProcess, stopAllGatewayProcesses } from "./support/gatewayProcess.ts"
import { freshDatabase } from "./support/database.ts"
it("starts three at once", async () => {
  for (let round = 0; round < 3; round++) {
    const db = await freshDatabase()
    const t0 = Date.now()
    const results = await Promise.allSettled([0, 1, 2].map(() => startGatewayProcess({ env: { ...db.env, SVC_ADMIN_KEY: "admin_x" } })))
    console.log("round", round, Date.now() - t0, results.map((r) => r.status === "fulfilled" ? "ok" : String(r.reason).slice(0, 1500)))
    await stopAllGatewayProcesses()
    await db.drop()
  }
}, 300000)
