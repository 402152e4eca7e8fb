/**
 * A process's credit leases, one per account, held in process. Far from an
 * account's balance's end, the process reserves more than a call asks for
 * (up to 1,024 calls' worth, and at most a sixteenth of what the account had
 * available), and its next calls are held from that lease with no statement:
 * nothing waits for the database before a call is answered. A call held from
 * a lease gets its reservation row when it is settled (the credit then leaves
 * the lease) or released (the credit goes back to it). What a lease has left
 * goes back to the account once it has been idle for a sweep, when the
 * account refuses a call, and when the process stops; a lease whose process
 * died is freed by the reservation sweeper. Near the balance's end no lease
 * is granted (ledgerLease.ts), and every call reserves on its own, so a
 * caller who cannot pay is refused exactly as before (docs/architecture.md).
 */
import type { Nanos } from "../../services/Money.ts"
import { LEASE_SHARE } from "./ledgerLease.ts"

/**
 * The most calls' worth a lease holds. It is taken again at half, and a take waits in the account's
 * turn behind the settlement statement in flight (10–25 ms at 32 connections here, longer at its
 * tail): with 256, a busy account's lease ran dry four times in a thousand calls, whose calls then
 * waited for a statement each, doubling the p99 (docs/performance.md, items 78 and 79).
 */
const MAX_LEASE_CALLS = 1024n

/** A lease is worth taking only for at least this many calls' worth. */
const MIN_LEASE_CALLS = 4n

/**
 * An account is leased to once this process made this many of its reservations alone within a
 * sweep: a busy account. A quiet one reserves call by call, and its figures stay exact.
 */
const BUSY_RESERVATIONS = 8

export interface CreditLease {
  readonly id: string
  readonly accountId: string
  /** Credit leased and not held by a call. */
  left: Nanos
  /**
   * Calls held from it and not ended yet, by reservation id: each ends once, however often it is
   * settled or released (a settlement kept in the journal is settled again when the database is
   * back), or the lease would count fewer calls open than it holds, and never be idle.
   */
  readonly open: Set<string>
  /** A take is in flight: one at a time. */
  taking: boolean
  /** Held from since the last sweep. */
  used: boolean
  /** No more claims or takes: the account refused a call; it goes back once its calls end. */
  closing: boolean
  /** What a call asks lately. */
  perCall: Nanos
  /** What the account had available when last seen (after a reservation or a take). */
  available: Nanos
  /** May have a row to give back: it was granted credit, or a take's answer was lost. */
  granted: boolean
  /** Reservations made alone since the last sweep. */
  alone: number
}

/** A take to send: more credit for lease `id`. */
export interface Take {
  readonly lease: CreditLease
  readonly amount: Nanos
}

export const makeCreditLeases = (newId: () => string) => {
  const byAccount = new Map<string, CreditLease>()
  const byId = new Map<string, CreditLease>()

  /**
   * How much more the lease should take, having seen `available` (0: none worth taking). It aims at
   * half the share the database grants, so a take still fits when other calls reserved meanwhile.
   */
  const wanted = (lease: CreditLease, available: Nanos): Nanos => {
    if (lease.taking || lease.closing) return 0n
    let want = lease.perCall * MAX_LEASE_CALLS
    if (want * LEASE_SHARE * 2n > available) want = available / (LEASE_SHARE * 2n)
    if (want < lease.perCall * MIN_LEASE_CALLS || lease.left * 2n >= want) return 0n
    return want - lease.left
  }

  /** What a call asks lately: each new call's amount weighs a fifth. */
  const remember = (lease: CreditLease, amount: Nanos) => void (lease.perCall = (lease.perCall * 4n + amount) / 5n)

  const taking = (lease: CreditLease, amount: Nanos): Take | undefined => {
    if (amount <= 0n) return undefined
    lease.taking = true
    return { lease, amount }
  }

  /** The account's lease, if it can cover `amount`. */
  const covering = (accountId: string, amount: Nanos) => {
    const lease = byAccount.get(accountId)
    return lease === undefined || lease.closing || lease.left < amount ? undefined : lease
  }

  return {
    /** Whether the account's lease can cover `amount` now. */
    covers: (accountId: string, amount: Nanos) => covering(accountId, amount) !== undefined,

    /** Holds `amount` from the account's lease for call `callId`: the lease, or undefined when it cannot cover it. */
    claim: (accountId: string, amount: Nanos, callId: string): CreditLease | undefined => {
      const lease = covering(accountId, amount)
      if (lease === undefined) return undefined
      lease.left -= amount
      lease.open.add(callId)
      lease.used = true
      remember(lease, amount)
      return lease
    },

    /** After a claim: more credit to take while the lease runs low, as far as the account was last seen. */
    refill: (lease: CreditLease): Take | undefined => taking(lease, wanted(lease, lease.available)),

    /** A reservation made on its own saw `available`: a lease to take or grow for the account's next calls. */
    saw: (accountId: string, amount: Nanos, available: Nanos): Take | undefined => {
      let lease = byAccount.get(accountId)
      if (lease === undefined) {
        lease = {
          id: newId(),
          accountId,
          left: 0n,
          open: new Set(),
          taking: false,
          used: true,
          closing: false,
          perCall: amount,
          available,
          granted: false,
          alone: 0
        }
        byAccount.set(accountId, lease)
        byId.set(lease.id, lease)
      } else {
        remember(lease, amount)
        lease.available = available
      }
      lease.used = true
      return ++lease.alone < BUSY_RESERVATIONS ? undefined : taking(lease, wanted(lease, available))
    },

    /** A take answered: `granted` more credit (0: the account had too little available for it), `available` left after it. */
    took: (lease: CreditLease, granted: Nanos, available: Nanos | undefined) => {
      lease.taking = false
      lease.left += granted
      if (granted > 0n) lease.granted = true
      if (available !== undefined) lease.available = available
    },

    /**
     * A take's answer was lost (the database went away mid-statement): it may have been granted, so
     * the lease is given back as one with a row (a give back of none frees nothing); it holds nothing more.
     */
    lost: (lease: CreditLease) => {
      lease.taking = false
      lease.granted = true
    },

    /** The account refused a call: its lease takes no more and goes back once its calls end. */
    refused: (accountId: string) => {
      const lease = byAccount.get(accountId)
      if (lease !== undefined) lease.closing = true
    },

    /**
     * Call `callId` held from lease `id` ended; `returned` is what goes back to it (a release: all it
     * held; a settlement: none). A call that already ended, or whose lease is forgotten, changes nothing.
     */
    ended: (id: string, callId: string, returned: Nanos) => {
      const lease = byId.get(id)
      if (lease === undefined || !lease.open.delete(callId)) return
      lease.left += returned
    },

    /**
     * The leases to give back now (idle since the last sweep, or closing, with no call open and no
     * take in flight), forgotten here; the rest are marked unused for the next sweep.
     */
    sweep: (): ReadonlyArray<CreditLease> => {
      const idle: Array<CreditLease> = []
      for (const lease of byId.values()) {
        if ((!lease.used || lease.closing) && lease.open.size === 0 && !lease.taking) idle.push(lease)
        lease.used = false
        lease.alone = 0
      }
      idle.forEach(forget)
      return idle.filter((lease) => lease.granted)
    },

    /**
     * Every lease that has or may get a row (a take in flight goes before its give back, in the
     * account's turns), forgotten here: the process stops, and they all go back.
     */
    all: (): ReadonlyArray<CreditLease> => {
      const leases = Array.from(byId.values())
      leases.forEach(forget)
      return leases.filter((lease) => lease.granted || lease.taking)
    },

    /** The leases with a row, to renew. */
    ids: () => Array.from(byId.values(), (lease) => lease.granted ? [lease.id] : []).flat(),

    /** Leases the database no longer has (swept: their process stalled past their time): forgotten. */
    keepOnly: (present: ReadonlySet<string>) => {
      for (const lease of Array.from(byId.values())) if (lease.granted && !present.has(lease.id)) forget(lease)
    }
  }

  function forget(lease: CreditLease) {
    byId.delete(lease.id)
    if (byAccount.get(lease.accountId) === lease) byAccount.delete(lease.accountId)
  }
}
