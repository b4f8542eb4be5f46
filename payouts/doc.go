// Package payouts is the disbursement lifecycle: quote, create (with its
// idempotency key and balance lock), submission to the vendor, status
// checks, lock expiry, operator approval and cancellation, and the vendor's
// callbacks: what each step does. When submits and status checks run is
// package dispatch's, which this package tells of what its commits made due
// (Handoff). The API, dispatch and the worker call it; it owns its
// transactions.
//
// # Lifecycle (docs/design.md, Disbursement lifecycle)
//
//	(create)             → PENDING_VERIFICATION  gross ≥ review threshold: locked, waits for an operator
//	(create)             → VERIFIED              inquiry passed, locked; due for submission
//	PENDING_VERIFICATION → VERIFIED              operator approves
//	PENDING_VERIFICATION, VERIFIED → CANCELLED   operator cancels; lock released
//	PENDING_VERIFICATION, VERIFIED → EXPIRED     lock TTL passed before submission; lock released
//	VERIFIED             → REQUESTED             vendor accepted (reference stored)
//	VERIFIED             → FAILED                vendor rejected; lock released, no money moved
//	REQUESTED            → SUCCESS               lock released, gross debited: net to vendor clearing, fee to platform
//	REQUESTED            → FAILED                vendor failed it; lock released
//	SUCCESS              → RETURNED              the bank returned it: net credited back (fee kept unless the client refunds it)
//
// Every move goes through transition, which checks models' table of
// allowed moves and applies it as a guarded update (WHERE status = from)
// together with its lock release, ledger posting and audit line, in one
// database transaction.
//
// # Vendor results
//
// A vendor's result is judged against the stored status (applyObserved):
// an open payout moves to it, a paid one may be returned, a repeat of the
// final status changes nothing, and anything else contradicting a final
// status is recorded in disbursement_late_results for operators and never
// applied. A callback is confirmed with the vendor's status query first.
// Paid payouts of vendors that do not notify (vendors.Notifies) are
// watched for a return, by status inquiry, for ReturnWatch.
//
// # Never pay twice, never lose a payout
//
// The vendor reference is derived from the disbursement id and is the
// vendor's idempotency key. Before the first submit, submit_attempted_at is
// set; from then on the outcome may be "accepted" even when the call failed,
// so a retry first asks the vendor for that reference and submits only when
// the vendor has never seen it. A disbursement whose submit was attempted
// never simply expires: its fate is the vendor's answer.
//
// Three rules keep one attempt from stepping on another. A submit's vendor
// call and the writes of its answer run under a deadline at its lease, so
// that, as far as the processes' clocks agree, nothing of an attempt
// arrives once another may be made. A claim and an expiry are guarded by
// the attempts as read, count and time (models.AttemptsRead), so that an
// attempt given back and claimed again is neither claimed over nor expired
// under, even by a write that outlived its deadline. A rejection is
// written only while its attempt is the latest, so that it never fails a
// payout a later attempt had paid. docs/model.md checks these rules in a
// model of the protocol.
//
// The disbursement row is its own outbox: a VERIFIED or REQUESTED row
// carries next_check_at, and the sweep (dispatch, through DueRows and
// ClaimDueRow) enqueues the submit or the status check of every row that
// is due, so a disbursement committed while Redis was unreachable, or
// whose task was lost with a killed worker, is still carried through.
//
// # Batches
//
// A submit is submitAll (submit.go) whether it comes alone (Submit) or in
// a batch: claim the attempt (a guarded update), one vendor call per
// vendor, one transaction of moves. The batches are SubmitFresh (first
// submits read together, submitbatch.go), SubmitDue (due payouts claimed
// by one statement, pump.go) and SubmitClaimed (payouts claimed with their
// row by an inline create); which submits make a batch, and when, is
// dispatch's (dispatch/paths.go lists every way in).
//
// A create's write is ledger.OpenDisbursements (creategroup.go): creates
// that reach their insert at the same moment are written together (on
// PostgreSQL one statement), a lone create as a group of one; the same
// conditional lock per wallet, at most one create per wallet and per key
// in a group, and each create still gets its own answer.
package payouts
