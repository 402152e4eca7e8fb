/**
 * One Health breaker contract, two implementations: HealthPg on a fresh
 * database (PGlite, or PostgreSQL with DATABASE_URL) and HealthMemory.
 */
import { healthContract, memoryHealth, pgHealth } from "./support/healthContract.ts"

healthContract(pgHealth)
healthContract(memoryHealth)
