/**
 * The settlement journal without a disk, and a database status whose probe
 * always answers: for unit tests of the stages above Billing, which need a
 * journal but not its files (the journal itself is tested on its files,
 * test/settlementJournal.test.ts).
 */
import { Effect, Layer } from "effect"
import { SettlementJournal } from "../../services/SettlementJournal.ts"
import { DatabaseStatus } from "../../services/DatabaseStatus.ts"
import { makeDatabaseStatus } from "../storage/DatabaseStatusLive.ts"
import type { JournalFiles } from "./journalFiles.ts"
import { makeSettlementJournal } from "./SettlementJournalFile.ts"

const noFiles: JournalFiles = { path: "(memory)", append: () => {}, rewrite: () => {}, adopt: () => "" }

export const DatabaseStatusMemory = Layer.scoped(
  DatabaseStatus,
  makeDatabaseStatus(Effect.void, { probeIntervalMs: 10, retryAfterSeconds: 1 })
)

/** `SettlementJournal` in memory, with `DatabaseStatusMemory`; needs a `Ledger`. */
export const SettlementJournalMemory = Layer.effect(SettlementJournal, makeSettlementJournal(noFiles)).pipe(
  Layer.provideMerge(DatabaseStatusMemory)
)
