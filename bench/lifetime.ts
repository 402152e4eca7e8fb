/**
 * How long a bench child process (a server of servers.ts, the load
 * generator) may live: it stops when its parent goes (`disconnect`), and this
 * bounds a parent that hangs. A full `npm run bench` keeps its upstream and
 * load generator from the first round to the shipped gateway's last, 4–6
 * minutes here and longer in a slow phase: a bound of 240 s once stopped them
 * mid-run, which failed the run with "failed requests" or a closed IPC channel.
 */
const LIFETIME_MS = 15 * 60_000

export const boundLifetime = (name: string) =>
  setTimeout(() => {
    console.error(`bench: ${name} stopped itself after ${LIFETIME_MS / 60_000} minutes (a stuck benchmark?)`)
    process.exit(1)
  }, LIFETIME_MS).unref()
