// Package payments is money coming in: a payment is created with a dynamic
// QRIS from the acquirer, shown on the checkout page, and moves once, from
// PENDING to SUCCESS (the acquirer reports it paid), FAILED (the acquirer
// reports a failure) or EXPIRED (nobody paid by expired_at), through one
// transition function with its table of allowed moves. A SUCCESS payment
// settles on the next business day in Asia/Jakarta (weekends and a holiday
// list skipped; SETTLEMENT_DELAY overrides it): its net amount is credited
// to the client's default wallet through the ledger, and only then can it
// be paid out. Each move records the client's webhook event in the same
// transaction. A result that arrives for a payment no longer PENDING is
// recorded for operators, never applied and never dropped.
package payments
