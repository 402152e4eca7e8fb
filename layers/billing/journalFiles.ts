/**
 * The settlement journal's files in `<dataDir>/journal/`: one per running
 * process (`settlements-<pid>-<random>.jsonl`), so processes sharing a data
 * directory never write into one file. Every write is fsync'd before it
 * counts. The file of a process that died (or of an earlier life of this pid)
 * is adopted: renamed to a name of ours (an atomic claim: of two processes
 * only one gets it), copied into our file, then removed.
 */
import { randomBytes } from "node:crypto"
import {
  closeSync,
  fstatSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeSync
} from "node:fs"
import { join } from "node:path"
import { Effect, type Scope } from "effect"
import { isAlive } from "../storage/Database.ts"

const NAME = /^settlements-(\d+)-[0-9a-f]+\.jsonl$/

export interface JournalFiles {
  /** This process's file. */
  readonly path: string
  /** Appends to this process's file; on disk when it returns. */
  readonly append: (text: string) => void
  /** Replaces this process's file with `text`, atomically and durably. */
  readonly rewrite: (text: string) => void
  /** Takes over the files of processes that are gone; answers their text (now also in ours). */
  readonly adopt: () => string
}

const fsyncPath = (path: string) => {
  const fd = openSync(path, "r")
  try {
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
}

const nameOfOurs = () => `settlements-${process.pid}-${randomBytes(6).toString("hex")}.jsonl`

/** Opens this process's journal file in `dir` for the scope; an empty one is removed at the end. */
export const openJournalFiles = (dir: string): Effect.Effect<JournalFiles, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.sync(() => {
      mkdirSync(dir, { recursive: true })
      const path = join(dir, nameOfOurs())
      let fd = openSync(path, "a")
      fsyncPath(dir)

      const append = (text: string) => {
        if (text === "") return
        writeSync(fd, text)
        fsyncSync(fd)
      }

      const rewrite = (text: string) => {
        const temporary = `${path}.tmp`
        const out = openSync(temporary, "w")
        try {
          writeSync(out, text)
          fsyncSync(out)
        } finally {
          closeSync(out)
        }
        renameSync(temporary, path)
        closeSync(fd)
        fd = openSync(path, "a")
        fsyncPath(dir)
      }

      const adopt = () => {
        let adopted = ""
        for (const name of readdirSync(dir)) {
          const match = NAME.exec(name)
          const from = join(dir, name)
          if (match === null || from === path) continue
          const pid = Number(match[1])
          if (pid !== process.pid && isAlive(pid)) continue
          const claimed = join(dir, nameOfOurs())
          try {
            renameSync(from, claimed)
          } catch {
            continue // another process claimed it first
          }
          const text = readFileSync(claimed, "utf8")
          // Only whole lines: a crash may have cut the last one short.
          const whole = text.slice(0, text.lastIndexOf("\n") + 1)
          append(whole)
          rmSync(claimed, { force: true })
          adopted += whole
        }
        if (adopted !== "") fsyncPath(dir)
        return adopted
      }

      return { path, append, rewrite, adopt, close: () => fd }
    }),
    (files) =>
      Effect.sync(() => {
        const fd = files.close()
        const empty = fstatSync(fd).size === 0
        closeSync(fd)
        if (empty) rmSync(files.path, { force: true })
      })
  )
