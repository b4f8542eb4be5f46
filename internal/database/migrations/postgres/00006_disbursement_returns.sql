-- Returns after SUCCESS (a bank sends a paid transfer back): the RETURNED
-- status with its time and the fee credited back, the client's setting that
-- decides about the fee, the watch of paid payouts of poll-only vendors, and
-- the vendor results that contradict a final status (kept for operators,
-- never applied).

-- +goose Up
ALTER TABLE disbursements DROP CONSTRAINT disbursements_status_check;
ALTER TABLE disbursements ADD CONSTRAINT disbursements_status_check
    CHECK (status IN ('PENDING_VERIFICATION', 'VERIFIED', 'REQUESTED', 'SUCCESS', 'FAILED', 'EXPIRED', 'CANCELLED', 'RETURNED'));
ALTER TABLE disbursements ADD COLUMN returned_at TIMESTAMPTZ NULL;
-- 0 when the fee was kept; the whole fee when the client's setting refunded it.
ALTER TABLE disbursements ADD COLUMN refunded_fee BIGINT NOT NULL DEFAULT 0;
ALTER TABLE disbursements ADD CONSTRAINT disbursements_refunded_fee_check
    CHECK (refunded_fee >= 0 AND refunded_fee <= platform_fee AND (refunded_fee = 0 OR status = 'RETURNED'));
ALTER TABLE disbursements ADD CONSTRAINT disbursements_returned_at_check
    CHECK ((status = 'RETURNED') = (returned_at IS NOT NULL));
-- Paid payouts of poll-only vendors are asked about for a while: a return.
CREATE INDEX disbursements_return_watch ON disbursements (next_check_at)
    WHERE status = 'SUCCESS' AND next_check_at IS NOT NULL;

ALTER TABLE clients ADD COLUMN refund_fee_on_return BOOLEAN NOT NULL DEFAULT FALSE;

-- A vendor result contradicting a stored final status (FAILED after
-- SUCCESS, SUCCESS after FAILED, ...): one row per disbursement and
-- reported status, counted on repeats, open until an operator resolves it.
CREATE TABLE disbursement_late_results (
    id               BIGSERIAL PRIMARY KEY,
    disbursement_id  UUID NOT NULL REFERENCES disbursements (id),
    vendor           TEXT NOT NULL,
    vendor_reference TEXT NOT NULL,
    stored_status    TEXT NOT NULL,
    reported_status  TEXT NOT NULL,
    reason           TEXT NOT NULL DEFAULT '',
    source           TEXT NOT NULL CHECK (source IN ('callback', 'poll')),
    first_seen_at    TIMESTAMPTZ NOT NULL,
    last_seen_at     TIMESTAMPTZ NOT NULL,
    seen_count       INTEGER NOT NULL DEFAULT 1 CHECK (seen_count >= 1),
    resolved_at      TIMESTAMPTZ NULL,
    resolved_by      TEXT NULL,
    note             TEXT NULL,
    UNIQUE (disbursement_id, reported_status)
);
CREATE INDEX disbursement_late_results_open ON disbursement_late_results (id) WHERE resolved_at IS NULL;

-- +goose Down
DROP TABLE disbursement_late_results;
ALTER TABLE clients DROP COLUMN refund_fee_on_return;
DROP INDEX disbursements_return_watch;
ALTER TABLE disbursements DROP CONSTRAINT disbursements_returned_at_check;
ALTER TABLE disbursements DROP CONSTRAINT disbursements_refunded_fee_check;
ALTER TABLE disbursements DROP COLUMN refunded_fee;
ALTER TABLE disbursements DROP COLUMN returned_at;
ALTER TABLE disbursements DROP CONSTRAINT disbursements_status_check;
ALTER TABLE disbursements ADD CONSTRAINT disbursements_status_check
    CHECK (status IN ('PENDING_VERIFICATION', 'VERIFIED', 'REQUESTED', 'SUCCESS', 'FAILED', 'EXPIRED', 'CANCELLED'));
