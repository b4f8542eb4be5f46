// Package payments is money coming in: a payment is created with a dynamic
// QRIS from the acquirer, shown on the checkout page, and moves once, from
// PENDING to SUCCESS (the acquirer reports it paid), FAILED (the acquirer
// reports a failure) or EXPIRED (nobody paid by expired_at), through one
// transition function with its table of allowed moves. A SUCCESS payment
// settles on the next business day in Asia/Jakarta (weekends and a holiday
// list skipped; SETTLEMENT_DELAY overrides it): its net amount is credited
// to the client's default wallet through the ledger, and only then can it
// be paid out. Each move records the client's webhook event in the same
// transaction. A result that arrives for a payment no longer PENDING, or
// at or after its expired_at (the payment is expired first), is recorded
// for operators, never applied and never dropped.
//
// payment:expire and payment:settle are scheduled for the whole second
// after the payment is due (asynq keeps whole seconds); a task that runs
// before its payment is due anyway answers NotDueError and is retried on
// time, so the periodic sweep is only the safety net.
package payments
