/**
 * One Idempotency contract, two implementations: IdempotencyPg on a fresh
 * database (PGlite, or PostgreSQL with DATABASE_URL) and IdempotencyMemory.
 */
import { idempotencyContract } from "./support/idempotencyContract.ts"
import { memoryMoney, pgMoney } from "./support/moneyLayers.ts"

idempotencyContract(pgMoney)
idempotencyContract(memoryMoney)
