/**
 * Colour only for a terminal. @effect/cli renders help and usage errors with
 * ANSI styles (bold headings) whatever the output is, and offers no switch;
 * so the CLI's console drops those codes from what goes to a stream that is
 * not a terminal, or everywhere when `NO_COLOR` is set (no-color.org).
 */
import { Console, Effect } from "effect"

/** Whether each stream may carry colour. */
export interface Colour {
  readonly stdout: boolean
  readonly stderr: boolean
}

/** What this process's streams allow: terminals only, and never under a non-empty `NO_COLOR`. */
export const colourOfProcess = (): Colour => {
  const allowed = (process.env.NO_COLOR ?? "") === ""
  return { stdout: allowed && process.stdout.isTTY === true, stderr: allowed && process.stderr.isTTY === true }
}

// Select Graphic Rendition sequences: the only escapes @effect/printer-ansi writes.
const STYLE = /\u001b\[[0-9;]*m/g

const plain = (parts: ReadonlyArray<unknown>) => parts.map((part) => typeof part === "string" ? part.replace(STYLE, "") : part)

const withoutStyles = (console: Console.Console, colour: Colour): Console.Console => {
  const out = (write: (...parts: ReadonlyArray<unknown>) => Effect.Effect<void>, coloured: boolean) =>
    coloured ? write : (...parts: ReadonlyArray<unknown>) => write(...plain(parts))
  return {
    ...console,
    log: out(console.log, colour.stdout),
    info: out(console.info, colour.stdout),
    error: out(console.error, colour.stderr),
    warn: out(console.warn, colour.stderr)
  }
}

/** Runs `effect` with a console that keeps styles only where `colour` allows them. */
export const withColourWhere = (colour: Colour) => <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Console.consoleWith((console) => Effect.withConsole(effect, withoutStyles(console, colour)))
