/**
 * The money invariants, checked in SQL after every billing test: per account,
 * credits − receipt totals = balance = sum of its `ledger` (stored entries and charges read from
 * receipts, migration 0025); reserved = open
 * reservations and credit leases; a balance below zero by no more than its recorded overages
 * (`payment.overage` events); no open reservation past its lease; one receipt
 * per settled reservation and none for released ones; upstream + margin = total; every
 * reservation, receipt and ledger entry of an account that exists (no foreign key checks these
 * rows: migration 0024), a receipt of a reservation (0027) and of its reservation's account.
 * Returns the violations, so a failing test shows them.
 */
type Query = <Row = Record<string, unknown>>(text: string, params?: ReadonlyArray<unknown>) => Promise<ReadonlyArray<Row>>

export const moneyViolations = async (query: Query): Promise<ReadonlyArray<string>> => {
  const rows = await query<{ violation: string }>(`
    WITH per_account AS (
      SELECT a.id, a.balance_usd, a.reserved_usd,
        coalesce((SELECT sum(amount_usd) FROM ledger l WHERE l.account_id = a.id AND l.kind = 'credit'), 0) AS credits,
        coalesce((SELECT sum(total_usd) FROM receipts r WHERE r.account_id = a.id), 0) AS charged,
        coalesce((SELECT sum(amount_usd) FROM ledger l WHERE l.account_id = a.id), 0) AS ledger,
        coalesce((SELECT sum(amount_usd) FROM reservations v WHERE v.account_id = a.id AND v.status = 'open'), 0)
          + coalesce((SELECT sum(amount_usd) FROM credit_leases c WHERE c.account_id = a.id), 0) AS held,
        coalesce((SELECT sum((data->>'overage_usd')::numeric) FROM events e
                  WHERE e.account_id = a.id AND e.type = 'payment.overage'), 0) AS overages
      FROM accounts a
    )
    SELECT id || ': balance ' || balance_usd || ' but credits - receipts = ' || (credits - charged) AS violation
      FROM per_account WHERE balance_usd <> credits - charged
    UNION ALL
    SELECT id || ': balance ' || balance_usd || ' but ledger sums to ' || ledger FROM per_account WHERE balance_usd <> ledger
    UNION ALL
    SELECT id || ': reserved ' || reserved_usd || ' but open reservations and credit leases hold ' || held
      FROM per_account WHERE reserved_usd <> held
    UNION ALL
    SELECT id || ': balance ' || balance_usd || ' below zero by more than its overages ' || overages
      FROM per_account WHERE balance_usd < -overages
    UNION ALL
    SELECT 'reservation ' || id || ' open past its lease' FROM reservations WHERE status = 'open' AND expires_at < now()
    UNION ALL
    SELECT 'credit lease ' || id || ' past its time' FROM credit_leases WHERE expires_at < now()
    UNION ALL
    SELECT 'settled reservation ' || v.id || ' has no receipt' FROM reservations v
      WHERE v.status = 'settled' AND NOT EXISTS (SELECT 1 FROM receipts r WHERE r.id = v.id)
    UNION ALL
    SELECT 'receipt ' || r.id || ' for a reservation that is ' || v.status FROM receipts r JOIN reservations v ON v.id = r.id
      WHERE v.status <> 'settled'
    UNION ALL
    SELECT 'receipt ' || id || ': upstream + margin <> total' FROM receipts WHERE upstream_usd + margin_usd <> total_usd
    UNION ALL
    SELECT 'receipt ' || id || ' of an unknown account' FROM receipts r
      WHERE NOT EXISTS (SELECT FROM accounts a WHERE a.id = r.account_id)
    UNION ALL
    SELECT 'receipt ' || r.id || ' of no reservation' FROM receipts r
      WHERE NOT EXISTS (SELECT FROM reservations v WHERE v.id = r.id)
    UNION ALL
    SELECT 'receipt ' || r.id || ' of another account than its reservation' FROM receipts r JOIN reservations v ON v.id = r.id
      WHERE v.account_id <> r.account_id
    UNION ALL
    SELECT 'reservation ' || id || ' of an unknown account' FROM reservations v
      WHERE NOT EXISTS (SELECT FROM accounts a WHERE a.id = v.account_id)
    UNION ALL
    SELECT 'ledger entry ' || id || ' of an unknown account' FROM ledger_entries l
      WHERE NOT EXISTS (SELECT FROM accounts a WHERE a.id = l.account_id)
    UNION ALL
    SELECT 'receipt ' || r.id || ' has no charge entry' FROM receipts r
      WHERE NOT EXISTS (SELECT 1 FROM ledger l WHERE l.reference = r.id AND l.kind = 'charge' AND l.amount_usd = -r.total_usd)
  `)
  return rows.map((row) => row.violation)
}

/**
 * What an account holds for calls: its `reserved_usd` less the credit its gateway processes have
 * leased for their next calls (layers/billing/creditLeases.ts), which goes back once they are idle.
 */
export const heldForCalls = async (query: Query, accountId: string): Promise<string> => {
  const [row] = await query<{ held: string }>(
    `SELECT (reserved_usd - coalesce((SELECT sum(amount_usd) FROM credit_leases c WHERE c.account_id = a.id), 0))::text AS held
     FROM accounts a WHERE id = $1`,
    [accountId]
  )
  return row!.held
}
