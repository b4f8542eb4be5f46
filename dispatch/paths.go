package dispatch

// Every way a payout is submitted or status-checked, the primary path
// first. The rules of each step are package payouts'; this package only
// decides when they run.
//
// # The primary path: the row and the sweep
//
// A payout due for a step is a committed row: VERIFIED (due for a submit)
// or REQUESTED (due for a status check), or SUCCESS under the return watch
// (due for a return check), with next_check_at saying when. Every commit
// that makes a step due sets it, before anyone is told (payouts'
// newDisbursement, claim, the moves' NextCheckAt, schedulePoll). The
// periodic payout:sweep task, Dispatcher.Sweep, claims every row whose
// next_check_at passed (payouts.Service.DueRows, ClaimDueRow) and queues
// its submit task (VERIFIED) or status-check task (otherwise), which
// Dispatcher.Submit and Dispatcher.Poll run. This path alone carries every
// payout through, whatever was lost: a Redis outage, a killed worker or
// API process, a lost wake-up, a failed enqueue. Every accelerator below
// leaves the row so that the sweep finds it should the accelerator fail.
//
// # Submit accelerators
//
//  1. The submit pump (pump.go: Dispatcher.RunSubmitPump, run by
//     Dispatcher.Run in the worker). Fresh payouts (VERIFIED, no attempt)
//     are claimed straight from the table in batches
//     (payouts.Service.SubmitDue), woken by the API's DueSignal
//     (Dispatcher.Due, published over Redis by internal/app's RedisDue,
//     delivered to WakePumps by internal/app.SubscribeWakes) or every
//     PumpRecheck. It is the usual path of a create's payout when the API
//     does not wait for the submit, and takes any fresh payout, however it
//     became due (an approval), within a PumpRecheck.
//  2. The inline submit (wait.go: Dispatcher.Claimed, writeInlineBatch).
//     With DISBURSEMENT_SUBMIT_WAIT, a create is stored with its first
//     attempt claimed and submitted at once by the API process, in group
//     commits (payouts.Service.SubmitClaimed); Dispatcher.SubmitAndWait
//     answers the merchant with its result. What it leaves unfinished goes
//     to a submit task.
//  3. The submit task (Dispatcher.Submit, the worker's payout:submit
//     handler): queued by Dispatcher.Due when there is no due signal (or
//     the payout has an attempt already), for an inline submit's leftover,
//     and by the sweep. It resolves an earlier attempt by asking the
//     vendor first (payouts.Service.Submit).
//  4. The batch loops (batch.go: Dispatcher.RunSubmitBatches, run by
//     Dispatcher.Run). Submit tasks running at the same moment hand their
//     first submits to a batch (payouts.Service.SubmitFresh); the rest go
//     alone.
//
// A status check (payouts.Service.Poll) that finds a payout still VERIFIED
// submits it as the submit task would.
//
// # Status-check accelerators
//
//  1. The status-check task (Dispatcher.Poll, the worker's payout:poll
//     handler), queued by payouts when the vendor accepts a payout and
//     after each check with a growing delay (payouts.PollDelay), or after a
//     check refused by the vendor's breaker; the sweep queues it when due.
//  2. The vendor's callback (payouts.Service.ApplyVendorResult, from the
//     API's callback routes), confirmed with the vendor's status query.
//
// # Waiting for a submit
//
// A create that waits (Dispatcher.SubmitAndWait) is answered by its
// inline submit, or woken by the commit that moves its payout out of
// VERIFIED in any process (Dispatcher.LeftVerified, published over Redis
// by internal/app's RedisWakes, delivered to Wake), or re-reads its row
// every WaitRecheck.
//
// # Held back
//
// No path claims a submit for a vendor whose circuit breaker holds calls
// back (payouts' gate.go): the pump's claim leaves its payouts, a task's
// submit is refused without an attempt and retried, and a claim refused at
// the call gives its attempt back. That is a rule of the claim (no attempt
// is counted for a call that never went out), so it stays in payouts
// whichever path asks.
