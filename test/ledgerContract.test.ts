/**
 * One Ledger contract, two implementations: LedgerPg on a fresh database
 * (PGlite, or PostgreSQL with DATABASE_URL) and LedgerMemory, so the test
 * layer cannot drift from the real one unnoticed.
 */
import { ledgerContract } from "./support/ledgerContract.ts"
import { memoryMoney, pgMoney } from "./support/moneyLayers.ts"

ledgerContract(pgMoney)
ledgerContract(memoryMoney)
