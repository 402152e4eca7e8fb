/**
 * One EventLog contract, two implementations: EventLogPg on a fresh database
 * (PGlite, or PostgreSQL with DATABASE_URL) and EventLogMemory.
 */
import { eventLogContract } from "./support/eventLogContract.ts"
import { memoryMoney, pgMoney } from "./support/moneyLayers.ts"

eventLogContract(pgMoney)
eventLogContract(memoryMoney)
