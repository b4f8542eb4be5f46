-- The SQLite twin of postgres/00006_disbursement_returns.sql.
-- SQLite cannot change a CHECK constraint in place: disbursements is rebuilt
-- (https://www.sqlite.org/lang_altertable.html#otheralter), with foreign
-- keys off around its own transaction, which is why goose runs it outside
-- one. The service's SQLite pool has one connection, so the pragma and the
-- transaction share it.

-- +goose NO TRANSACTION
-- +goose Up
PRAGMA foreign_keys = OFF;
BEGIN IMMEDIATE;
CREATE TABLE disbursements_new (
    id                  TEXT PRIMARY KEY,
    client_id           TEXT NOT NULL REFERENCES clients (id),
    wallet_id           TEXT NOT NULL REFERENCES wallets (id),
    idempotency_key     TEXT NOT NULL CHECK (length(idempotency_key) BETWEEN 1 AND 64),
    status              TEXT NOT NULL CHECK (status IN ('PENDING_VERIFICATION', 'VERIFIED', 'REQUESTED',
                                                        'SUCCESS', 'FAILED', 'EXPIRED', 'CANCELLED', 'RETURNED')),
    amount              INTEGER NOT NULL CHECK (amount > 0),
    platform_fee        INTEGER NOT NULL CHECK (platform_fee >= 0),
    net_amount          INTEGER NOT NULL CHECK (net_amount > 0),
    currency            TEXT NOT NULL DEFAULT 'IDR',
    transfer_type       TEXT NOT NULL CHECK (transfer_type IN ('BIFAST', 'RTOL')),
    bank_code           TEXT NOT NULL,
    bank_name           TEXT NOT NULL,
    account_no          TEXT NOT NULL,
    account_holder_name TEXT NOT NULL,
    memo                TEXT NULL,
    reference_id        TEXT NULL,
    vendor              TEXT NOT NULL,
    vendor_reference    TEXT NOT NULL UNIQUE,
    failed_reason       TEXT NULL,
    lock_expires_at     DATETIME NOT NULL,
    submit_attempted_at DATETIME NULL,
    submit_attempts     INTEGER NOT NULL DEFAULT 0 CHECK (submit_attempts >= 0),
    checks              INTEGER NOT NULL DEFAULT 0 CHECK (checks >= 0),
    next_check_at       DATETIME NULL,
    requested_at        DATETIME NULL,
    completed_at        DATETIME NULL,
    created_at          DATETIME NOT NULL,
    updated_at          DATETIME NOT NULL,
    returned_at         DATETIME NULL,
    -- 0 when the fee was kept; the whole fee when the client's setting refunded it.
    refunded_fee        INTEGER NOT NULL DEFAULT 0,
    CHECK (amount = platform_fee + net_amount),
    CHECK (refunded_fee >= 0 AND refunded_fee <= platform_fee AND (refunded_fee = 0 OR status = 'RETURNED')),
    CHECK ((status = 'RETURNED') = (returned_at IS NOT NULL))
);
INSERT INTO disbursements_new (id, client_id, wallet_id, idempotency_key, status, amount, platform_fee, net_amount,
    currency, transfer_type, bank_code, bank_name, account_no, account_holder_name, memo, reference_id, vendor,
    vendor_reference, failed_reason, lock_expires_at, submit_attempted_at, submit_attempts, checks, next_check_at,
    requested_at, completed_at, created_at, updated_at)
SELECT id, client_id, wallet_id, idempotency_key, status, amount, platform_fee, net_amount,
    currency, transfer_type, bank_code, bank_name, account_no, account_holder_name, memo, reference_id, vendor,
    vendor_reference, failed_reason, lock_expires_at, submit_attempted_at, submit_attempts, checks, next_check_at,
    requested_at, completed_at, created_at, updated_at
FROM disbursements;
DROP TABLE disbursements;
ALTER TABLE disbursements_new RENAME TO disbursements;
CREATE UNIQUE INDEX disbursements_idempotency ON disbursements (client_id, idempotency_key);
CREATE INDEX disbursements_open ON disbursements (status, next_check_at)
    WHERE status IN ('PENDING_VERIFICATION', 'VERIFIED', 'REQUESTED');
CREATE INDEX disbursements_wallet_open ON disbursements (wallet_id)
    WHERE status IN ('PENDING_VERIFICATION', 'VERIFIED', 'REQUESTED');
-- Paid payouts of poll-only vendors are asked about for a while: a return.
CREATE INDEX disbursements_return_watch ON disbursements (next_check_at)
    WHERE status = 'SUCCESS' AND next_check_at IS NOT NULL;

ALTER TABLE clients ADD COLUMN refund_fee_on_return BOOLEAN NOT NULL DEFAULT FALSE;

-- A vendor result contradicting a stored final status (FAILED after
-- SUCCESS, SUCCESS after FAILED, ...): one row per disbursement and
-- reported status, counted on repeats, open until an operator resolves it.
CREATE TABLE disbursement_late_results (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    disbursement_id  TEXT NOT NULL REFERENCES disbursements (id),
    vendor           TEXT NOT NULL,
    vendor_reference TEXT NOT NULL,
    stored_status    TEXT NOT NULL,
    reported_status  TEXT NOT NULL,
    reason           TEXT NOT NULL DEFAULT '',
    source           TEXT NOT NULL CHECK (source IN ('callback', 'poll')),
    first_seen_at    DATETIME NOT NULL,
    last_seen_at     DATETIME NOT NULL,
    seen_count       INTEGER NOT NULL DEFAULT 1 CHECK (seen_count >= 1),
    resolved_at      DATETIME NULL,
    resolved_by      TEXT NULL,
    note             TEXT NULL,
    UNIQUE (disbursement_id, reported_status)
);
CREATE INDEX disbursement_late_results_open ON disbursement_late_results (id) WHERE resolved_at IS NULL;
COMMIT;
PRAGMA foreign_keys = ON;

-- +goose Down
DROP TABLE disbursement_late_results;
ALTER TABLE clients DROP COLUMN refund_fee_on_return;
DROP INDEX disbursements_return_watch;
