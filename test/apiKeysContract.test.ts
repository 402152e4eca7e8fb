/**
 * One ApiKeys contract, two implementations: ApiKeysPg on a fresh database
 * (PGlite, or PostgreSQL with DATABASE_URL) and ApiKeysMemory.
 */
import { apiKeysContract } from "./support/apiKeysContract.ts"
import { memoryMoney, pgMoney } from "./support/moneyLayers.ts"

apiKeysContract(pgMoney)
apiKeysContract(memoryMoney)
