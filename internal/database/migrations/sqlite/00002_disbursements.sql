-- The SQLite twin of postgres/00002_disbursements.sql.
-- Disbursements (payouts) with their idempotency key, the audit trail of
-- their state changes, and the payouts the in-process sandbox vendors have
-- accepted (shared by api, worker and admin processes).

-- +goose Up
CREATE TABLE disbursements (
    id                  TEXT PRIMARY KEY,
    client_id           TEXT NOT NULL REFERENCES clients (id),
    wallet_id           TEXT NOT NULL REFERENCES wallets (id),
    -- The row is also the idempotency record: (client_id, idempotency_key)
    -- is unique and the compared parameters are the columns below.
    idempotency_key     TEXT NOT NULL CHECK (length(idempotency_key) BETWEEN 1 AND 64),
    status              TEXT NOT NULL CHECK (status IN ('PENDING_VERIFICATION', 'VERIFIED', 'REQUESTED',
                                                        'SUCCESS', 'FAILED', 'EXPIRED', 'CANCELLED')),
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
    -- Set (and counted) before each call asking the vendor to pay: from the
    -- first on, the payout may exist at the vendor, so the lock never simply
    -- expires and a retry asks the vendor for the reference first. The
    -- count guards concurrent submitters and the expiry (optimistic lock).
    submit_attempted_at DATETIME NULL,
    submit_attempts     INTEGER NOT NULL DEFAULT 0 CHECK (submit_attempts >= 0),
    checks              INTEGER NOT NULL DEFAULT 0 CHECK (checks >= 0),
    next_check_at       DATETIME NULL,
    requested_at        DATETIME NULL,
    completed_at        DATETIME NULL,
    created_at          DATETIME NOT NULL,
    updated_at          DATETIME NOT NULL,
    CHECK (amount = platform_fee + net_amount)
);
CREATE UNIQUE INDEX disbursements_idempotency ON disbursements (client_id, idempotency_key);
-- The worker's sweeps look at open disbursements only.
CREATE INDEX disbursements_open ON disbursements (status, next_check_at)
    WHERE status IN ('PENDING_VERIFICATION', 'VERIFIED', 'REQUESTED');
CREATE INDEX disbursements_wallet_open ON disbursements (wallet_id)
    WHERE status IN ('PENDING_VERIFICATION', 'VERIFIED', 'REQUESTED');

-- Every state change, for operators: who moved what, when and why.
CREATE TABLE disbursement_transitions (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    disbursement_id TEXT NOT NULL REFERENCES disbursements (id),
    from_status     TEXT NOT NULL,
    to_status       TEXT NOT NULL,
    reason          TEXT NOT NULL DEFAULT '',
    created_at      DATETIME NOT NULL
);
CREATE INDEX disbursement_transitions_disbursement ON disbursement_transitions (disbursement_id, id);

-- Payouts accepted by the in-process sandbox vendors (simbank, simwallet).
-- The reference is the vendor's idempotency key: one row, paid once.
CREATE TABLE sandbox_payouts (
    reference      TEXT PRIMARY KEY,
    vendor         TEXT NOT NULL,
    bank_code      TEXT NOT NULL,
    account_no     TEXT NOT NULL,
    transfer_type  TEXT NOT NULL,
    amount         INTEGER NOT NULL CHECK (amount > 0),
    submit_calls   INTEGER NOT NULL DEFAULT 1,
    answer_lost    BOOLEAN NOT NULL DEFAULT FALSE,
    final_status   TEXT NULL CHECK (final_status IN ('SUCCESS', 'FAILED')),
    failure_reason TEXT NOT NULL DEFAULT '',
    accepted_at    DATETIME NOT NULL,
    updated_at     DATETIME NOT NULL
);

-- +goose Down
DROP TABLE sandbox_payouts;
DROP TABLE disbursement_transitions;
DROP TABLE disbursements;
