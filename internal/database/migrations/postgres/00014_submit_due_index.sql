-- The worker's submit pump claims the payouts waiting for their first
-- submit (VERIFIED, no attempt yet) oldest first, and an idle pump asks
-- whether there are any (payouts/pump.go). The open-payout indexes it used
-- (disbursements_open, disbursements_wallet_open) also hold every VERIFIED
-- row already claimed and each dead version a non-HOT update left in them
-- until VACUUM: under load a claim's bitmap scan read thousands of entries
-- to find a few dozen rows (2-13 ms a claim, the pump's idle probe 8 ms). This
-- index holds only the rows a claim takes; a claimed row's new version is
-- not in it, and the ordered index scan skips the dead entries it meets.
-- Built concurrently: creates keep writing while it builds. A build cut
-- short leaves an invalid index of that name behind, so a rerun drops it
-- first rather than skip it.

-- +goose NO TRANSACTION
-- +goose Up
DROP INDEX CONCURRENTLY IF EXISTS disbursements_submit_due;
CREATE INDEX CONCURRENTLY disbursements_submit_due ON disbursements (next_check_at)
    WHERE status = 'VERIFIED' AND submit_attempts = 0;

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS disbursements_submit_due;
