-- The worker's submit pump claims the payouts waiting for their first
-- submit (VERIFIED, no attempt yet) oldest first: this index holds only
-- those rows (see the PostgreSQL migration of the same number).

-- +goose Up
CREATE INDEX IF NOT EXISTS disbursements_submit_due ON disbursements (next_check_at)
    WHERE status = 'VERIFIED' AND submit_attempts = 0;

-- +goose Down
DROP INDEX IF EXISTS disbursements_submit_due;
