/**
 * The settlement journal on local disk (`<dataDir>/journal/`, see
 * journalFiles.ts): a kept settlement is one fsync'd JSON line
 * (journalCodec.ts) and stays in memory until the ledger has it. A replay —
 * at start, every `database.probeIntervalMs` while anything is kept, and by
 * the sweeper before it releases holds — first looks for the receipt (the
 * failed write may have reached the database after all), settles through the
 * ledger otherwise, and stops at the first sign of an outage. The ledger
 * closes a reservation once, so a settlement can never be charged twice.
 * Logged once per change: when the journal starts keeping, when it is empty
 * again, and once per settlement the ledger refuses for another reason.
 */
import { join } from "node:path"
import { Cause, Effect, Exit, Layer, Schedule } from "effect"
import { AppConfig } from "../../services/Config.ts"
import { DatabaseStatus } from "../../services/DatabaseStatus.ts"
import { Ledger } from "../../services/Ledger.ts"
import { type KeptSettlement, SettlementJournal } from "../../services/SettlementJournal.ts"
import { decodeLine, encodeLine } from "./journalCodec.ts"
import { type JournalFiles, openJournalFiles } from "./journalFiles.ts"

/** The ledger's word for a reservation that is closed already (another writer got there first). */
const settledAlready = (cause: Cause.Cause<unknown>) => Cause.pretty(cause).includes("was settled already")

/** The journal over its files (real ones, or none in memory for unit tests of other stages). */
export const makeSettlementJournal = (files: JournalFiles) =>
  Effect.gen(function*() {
    const ledger = yield* Ledger
    const database = yield* DatabaseStatus
    const kept = new Map<string, KeptSettlement>()
    /** Settlements the ledger refused for another reason than an outage: logged once each. */
    const refused = new Set<string>()
    const lock = yield* Effect.makeSemaphore(1)

    const remember = (text: string) => {
      for (const line of text.split("\n")) {
        const settlement = line === "" ? undefined : decodeLine(line)
        if (settlement !== undefined && !kept.has(settlement.reservation.id)) kept.set(settlement.reservation.id, settlement)
      }
    }

    const keep = (settlement: KeptSettlement) =>
      Effect.suspend(() => {
        if (kept.has(settlement.reservation.id)) return Effect.void
        files.append(encodeLine(settlement))
        kept.set(settlement.reservation.id, settlement)
        return kept.size === 1
          ? Effect.logWarning(`settlements kept in ${files.path} until the database takes them`)
          : Effect.void
      })

    /** Written once: found as a receipt already, else settled now. */
    const write = ({ bill, reservation }: KeptSettlement) =>
      ledger.receipt(reservation.accountId, reservation.id).pipe(
        Effect.asVoid,
        Effect.catchTag("NotFound", () => Effect.asVoid(ledger.settle(reservation, bill)))
      )

    const replayAll = Effect.gen(function*() {
      remember(files.adopt())
      let settled = 0
      for (const settlement of [...kept.values()]) {
        const id = settlement.reservation.id
        const exit = yield* Effect.exit(write(settlement))
        if (Exit.isFailure(exit) && !settledAlready(exit.cause)) {
          // An outage: the rest waits for the database too.
          if (yield* database.observe(exit.cause)) break
          if (!refused.has(id)) {
            refused.add(id)
            yield* Effect.logError(`settlement of ${id} stays in the journal: the ledger refused it`, exit.cause)
          }
          continue
        }
        kept.delete(id)
        refused.delete(id)
        settled++
      }
      if (settled > 0) {
        files.rewrite([...kept.values()].map(encodeLine).join(""))
        yield* Effect.logInfo(
          `journal: ${settled} kept settlements written to the ledger` +
            (kept.size > 0 ? `, ${kept.size} still kept` : ", none left")
        )
      }
      return { settled, pending: kept.size }
    })

    const replay = lock.withPermits(1)(replayAll)
    return { keep, replay, pending: Effect.sync(() => [...kept.keys()]) }
  })

export const SettlementJournalFile = Layer.scoped(
  SettlementJournal,
  Effect.gen(function*() {
    const { dataDir, file } = yield* AppConfig
    const journal = yield* makeSettlementJournal(yield* openJournalFiles(join(dataDir, "journal")))
    // Left by a crash (ours or another process's on this data directory): written before anything serves.
    yield* journal.replay
    const retry = Effect.flatMap(journal.pending, (pending) => pending.length > 0 ? journal.replay : Effect.void).pipe(
      Effect.catchAllCause((cause) => Effect.logError("journal replay failed", cause))
    )
    yield* Effect.forkScoped(Effect.repeat(retry, Schedule.spaced(`${file.database.probeIntervalMs} millis`)))
    return SettlementJournal.of(journal)
  })
)
