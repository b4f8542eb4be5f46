-- The SQLite twin of postgres/00009_schema_parity.sql.
-- TestSchemaParity found SQLite's TEXT primary keys accepting NULL: SQLite
-- lets a PRIMARY KEY that is not INTEGER PRIMARY KEY hold NULL unless it is
-- declared NOT NULL (https://www.sqlite.org/lang_createtable.html#the_primary_key),
-- where PostgreSQL's never do. The service always sets its ids, but nothing
-- refused a NULL one. SQLite cannot add NOT NULL to a column in place: each
-- of the eight tables is rebuilt the way 00006 rebuilt disbursements
-- (https://www.sqlite.org/lang_altertable.html#otheralter), its rows copied
-- column by column, its indexes and triggers restated as they were. A row
-- with a NULL id stops the migration (NOT NULL constraint failed) rather
-- than being dropped: fix it by hand, then migrate again.

-- +goose NO TRANSACTION
-- +goose Up
PRAGMA foreign_keys = OFF;
BEGIN IMMEDIATE;

-- clients
CREATE TABLE clients_new (
    id                  TEXT NOT NULL PRIMARY KEY,
    name                TEXT NOT NULL CHECK (name <> ''),
    kind                TEXT NOT NULL CHECK (kind IN ('merchant', 'holding')),
    environment         TEXT NOT NULL CHECK (environment IN ('production', 'staging')),
    allowed_ips         TEXT NOT NULL DEFAULT '',
    payout_webhook_url  TEXT NOT NULL DEFAULT '',
    payment_webhook_url TEXT NOT NULL DEFAULT '',
    withdrawals         TEXT NOT NULL DEFAULT 'active' CHECK (withdrawals IN ('active', 'suspended')),
    payment_fee_bps     INTEGER NOT NULL DEFAULT 70 CHECK (payment_fee_bps BETWEEN 0 AND 10000),
    bifast_fee          INTEGER NOT NULL DEFAULT 25000000 CHECK (bifast_fee >= 0),
    rtol_fee            INTEGER NOT NULL DEFAULT 65000000 CHECK (rtol_fee >= 0),
    bifast_min_net      INTEGER NOT NULL DEFAULT 100000000 CHECK (bifast_min_net >= 0),
    rtol_min_net        INTEGER NOT NULL DEFAULT 100000000 CHECK (rtol_min_net >= 0),
    review_threshold    INTEGER NULL CHECK (review_threshold > 0),
    created_at          DATETIME NOT NULL,
    updated_at          DATETIME NOT NULL,
    refund_fee_on_return    BOOLEAN NOT NULL DEFAULT FALSE,
    payout_webhook_url_enc  TEXT NOT NULL DEFAULT '',
    payment_webhook_url_enc TEXT NOT NULL DEFAULT ''
);
INSERT INTO clients_new (id, name, kind, environment, allowed_ips, payout_webhook_url, payment_webhook_url, withdrawals, payment_fee_bps, bifast_fee, rtol_fee, bifast_min_net, rtol_min_net, review_threshold, created_at, updated_at, refund_fee_on_return, payout_webhook_url_enc, payment_webhook_url_enc)
SELECT id, name, kind, environment, allowed_ips, payout_webhook_url, payment_webhook_url, withdrawals, payment_fee_bps, bifast_fee, rtol_fee, bifast_min_net, rtol_min_net, review_threshold, created_at, updated_at, refund_fee_on_return, payout_webhook_url_enc, payment_webhook_url_enc FROM clients;
DROP TABLE clients;
ALTER TABLE clients_new RENAME TO clients;

-- credentials
CREATE TABLE credentials_new (
    id                  TEXT NOT NULL PRIMARY KEY,
    client_id           TEXT NOT NULL REFERENCES clients (id),
    api_key_hash        TEXT NOT NULL UNIQUE,
    api_key_prefix      TEXT NOT NULL,
    signing_secret_enc  TEXT NULL,
    callback_secret_enc TEXT NOT NULL,
    created_at          DATETIME NOT NULL,
    revoked_at          DATETIME NULL
);
INSERT INTO credentials_new (id, client_id, api_key_hash, api_key_prefix, signing_secret_enc, callback_secret_enc, created_at, revoked_at)
SELECT id, client_id, api_key_hash, api_key_prefix, signing_secret_enc, callback_secret_enc, created_at, revoked_at FROM credentials;
DROP TABLE credentials;
ALTER TABLE credentials_new RENAME TO credentials;
CREATE UNIQUE INDEX credentials_one_active ON credentials (client_id) WHERE revoked_at IS NULL;

-- wallets
CREATE TABLE wallets_new (
    id         TEXT NOT NULL PRIMARY KEY,
    client_id  TEXT NOT NULL REFERENCES clients (id),
    name       TEXT NOT NULL CHECK (name <> ''),
    vendor     TEXT NOT NULL,
    state      TEXT NOT NULL CHECK (state IN ('provisioning', 'active')),
    is_default BOOLEAN NOT NULL DEFAULT FALSE,
    balance    INTEGER NOT NULL DEFAULT 0,
    locked     INTEGER NOT NULL DEFAULT 0 CHECK (locked >= 0),
    created_at DATETIME NOT NULL,
    updated_at DATETIME NOT NULL
);
INSERT INTO wallets_new (id, client_id, name, vendor, state, is_default, balance, locked, created_at, updated_at)
SELECT id, client_id, name, vendor, state, is_default, balance, locked, created_at, updated_at FROM wallets;
DROP TABLE wallets;
ALTER TABLE wallets_new RENAME TO wallets;
CREATE INDEX wallets_client ON wallets (client_id, created_at);
CREATE UNIQUE INDEX wallets_one_default ON wallets (client_id) WHERE is_default;
-- +goose StatementBegin
CREATE TRIGGER wallets_money_insert BEFORE INSERT ON wallets
WHEN (typeof(NEW.balance) <> 'integer' OR NEW.balance NOT BETWEEN -1000000000000000000 AND 1000000000000000000)
  OR (typeof(NEW.locked) <> 'integer' OR NEW.locked NOT BETWEEN 0 AND 1000000000000000000)
BEGIN SELECT RAISE(ABORT, 'wallets: balance, locked must be integers within range (money is integer units, at most 10^18)'); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER wallets_money_update BEFORE UPDATE OF balance, locked ON wallets
WHEN (typeof(NEW.balance) <> 'integer' OR NEW.balance NOT BETWEEN -1000000000000000000 AND 1000000000000000000)
  OR (typeof(NEW.locked) <> 'integer' OR NEW.locked NOT BETWEEN 0 AND 1000000000000000000)
BEGIN SELECT RAISE(ABORT, 'wallets: balance, locked must be integers within range (money is integer units, at most 10^18)'); END;
-- +goose StatementEnd

-- ledger_transactions
CREATE TABLE ledger_transactions_new (
    id         TEXT NOT NULL PRIMARY KEY,
    kind       TEXT NOT NULL,
    memo       TEXT NOT NULL DEFAULT '',
    reference  TEXT NOT NULL DEFAULT '',
    created_at DATETIME NOT NULL
);
INSERT INTO ledger_transactions_new (id, kind, memo, reference, created_at)
SELECT id, kind, memo, reference, created_at FROM ledger_transactions;
DROP TABLE ledger_transactions;
ALTER TABLE ledger_transactions_new RENAME TO ledger_transactions;
-- +goose StatementBegin
CREATE TRIGGER ledger_transactions_no_update BEFORE UPDATE ON ledger_transactions
BEGIN SELECT RAISE(ABORT, 'the ledger is append-only: UPDATE on ledger_transactions refused'); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER ledger_transactions_no_delete BEFORE DELETE ON ledger_transactions
BEGIN SELECT RAISE(ABORT, 'the ledger is append-only: DELETE on ledger_transactions refused'); END;
-- +goose StatementEnd

-- disbursements
CREATE TABLE disbursements_new (
    id                  TEXT NOT NULL PRIMARY KEY,
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
INSERT INTO disbursements_new (id, client_id, wallet_id, idempotency_key, status, amount, platform_fee, net_amount, currency, transfer_type, bank_code, bank_name, account_no, account_holder_name, memo, reference_id, vendor, vendor_reference, failed_reason, lock_expires_at, submit_attempted_at, submit_attempts, checks, next_check_at, requested_at, completed_at, created_at, updated_at, returned_at, refunded_fee)
SELECT id, client_id, wallet_id, idempotency_key, status, amount, platform_fee, net_amount, currency, transfer_type, bank_code, bank_name, account_no, account_holder_name, memo, reference_id, vendor, vendor_reference, failed_reason, lock_expires_at, submit_attempted_at, submit_attempts, checks, next_check_at, requested_at, completed_at, created_at, updated_at, returned_at, refunded_fee FROM disbursements;
DROP TABLE disbursements;
ALTER TABLE disbursements_new RENAME TO disbursements;
CREATE UNIQUE INDEX disbursements_idempotency ON disbursements (client_id, idempotency_key);
CREATE INDEX disbursements_open ON disbursements (status, next_check_at)
    WHERE status IN ('PENDING_VERIFICATION', 'VERIFIED', 'REQUESTED');
CREATE INDEX disbursements_wallet_open ON disbursements (wallet_id)
    WHERE status IN ('PENDING_VERIFICATION', 'VERIFIED', 'REQUESTED');
CREATE INDEX disbursements_return_watch ON disbursements (next_check_at)
    WHERE status = 'SUCCESS' AND next_check_at IS NOT NULL;
-- +goose StatementBegin
CREATE TRIGGER disbursements_money_insert BEFORE INSERT ON disbursements
WHEN (typeof(NEW.amount) <> 'integer' OR NEW.amount NOT BETWEEN 0 AND 1000000000000000000)
  OR (typeof(NEW.platform_fee) <> 'integer' OR NEW.platform_fee NOT BETWEEN 0 AND 1000000000000000000)
  OR (typeof(NEW.net_amount) <> 'integer' OR NEW.net_amount NOT BETWEEN 0 AND 1000000000000000000)
BEGIN SELECT RAISE(ABORT, 'disbursements: amount, platform_fee, net_amount must be integers within range (money is integer units, at most 10^18)'); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER disbursements_money_update BEFORE UPDATE OF amount, platform_fee, net_amount ON disbursements
WHEN (typeof(NEW.amount) <> 'integer' OR NEW.amount NOT BETWEEN 0 AND 1000000000000000000)
  OR (typeof(NEW.platform_fee) <> 'integer' OR NEW.platform_fee NOT BETWEEN 0 AND 1000000000000000000)
  OR (typeof(NEW.net_amount) <> 'integer' OR NEW.net_amount NOT BETWEEN 0 AND 1000000000000000000)
BEGIN SELECT RAISE(ABORT, 'disbursements: amount, platform_fee, net_amount must be integers within range (money is integer units, at most 10^18)'); END;
-- +goose StatementEnd

-- sandbox_payouts
CREATE TABLE sandbox_payouts_new (
    reference      TEXT NOT NULL PRIMARY KEY,
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
INSERT INTO sandbox_payouts_new (reference, vendor, bank_code, account_no, transfer_type, amount, submit_calls, answer_lost, final_status, failure_reason, accepted_at, updated_at)
SELECT reference, vendor, bank_code, account_no, transfer_type, amount, submit_calls, answer_lost, final_status, failure_reason, accepted_at, updated_at FROM sandbox_payouts;
DROP TABLE sandbox_payouts;
ALTER TABLE sandbox_payouts_new RENAME TO sandbox_payouts;

-- webhook_events
CREATE TABLE webhook_events_new (
    id              TEXT NOT NULL PRIMARY KEY,
    client_id       TEXT NOT NULL REFERENCES clients (id),
    event           TEXT NOT NULL,
    -- The disbursement or payment the event is about; its events are
    -- delivered in sequence order.
    subject_id      TEXT NOT NULL,
    sequence        INTEGER NOT NULL CHECK (sequence > 0),
    -- Which of the client's URLs receives it: 'payout' or 'payment'.
    target          TEXT NOT NULL CHECK (target IN ('payout', 'payment')),
    body            TEXT NOT NULL,
    state           TEXT NOT NULL CHECK (state IN ('pending', 'delivered', 'failed', 'no_url')),
    attempts        INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    next_attempt_at DATETIME NULL,
    delivered_at    DATETIME NULL,
    created_at      DATETIME NOT NULL,
    updated_at      DATETIME NOT NULL,
    UNIQUE (subject_id, sequence)
);
INSERT INTO webhook_events_new (id, client_id, event, subject_id, sequence, target, body, state, attempts, next_attempt_at, delivered_at, created_at, updated_at)
SELECT id, client_id, event, subject_id, sequence, target, body, state, attempts, next_attempt_at, delivered_at, created_at, updated_at FROM webhook_events;
DROP TABLE webhook_events;
ALTER TABLE webhook_events_new RENAME TO webhook_events;
CREATE INDEX webhook_events_client ON webhook_events (client_id, created_at);
CREATE INDEX webhook_events_due ON webhook_events (next_attempt_at) WHERE state = 'pending';

-- payments
CREATE TABLE payments_new (
    id                     TEXT NOT NULL PRIMARY KEY,
    client_id              TEXT NOT NULL REFERENCES clients (id),
    -- The client's default wallet when the payment was created: the
    -- settlement is credited there.
    wallet_id              TEXT NOT NULL REFERENCES wallets (id),
    payer_id               TEXT NOT NULL CHECK (length(payer_id) BETWEEN 1 AND 64),
    flow                   TEXT NOT NULL CHECK (flow IN ('embed')),
    amount                 INTEGER NOT NULL CHECK (amount > 0),
    platform_fee           INTEGER NOT NULL CHECK (platform_fee >= 0),
    net_amount             INTEGER NOT NULL CHECK (net_amount >= 0),
    currency               TEXT NOT NULL DEFAULT 'IDR',
    status                 TEXT NOT NULL CHECK (status IN ('PENDING', 'SUCCESS', 'EXPIRED', 'FAILED')),
    acquirer               TEXT NOT NULL,
    qr_payload             TEXT NOT NULL,
    expired_at             DATETIME NOT NULL,
    paid_at                DATETIME NULL,
    retrieval_reference_no TEXT NULL,
    failed_reason          TEXT NULL,
    -- When the settlement is due (next business day), and when it happened.
    settle_at              DATETIME NULL,
    settled_at             DATETIME NULL,
    created_at             DATETIME NOT NULL,
    updated_at             DATETIME NOT NULL,
    paid_at_reported       DATETIME NULL,
    reported_amount        INTEGER NULL CHECK (reported_amount >= 0),
    hold_reason            TEXT NULL,
    settlement_error       TEXT NULL,
    CHECK (amount = platform_fee + net_amount),
    CHECK (settled_at IS NULL OR status = 'SUCCESS')
);
INSERT INTO payments_new (id, client_id, wallet_id, payer_id, flow, amount, platform_fee, net_amount, currency, status, acquirer, qr_payload, expired_at, paid_at, retrieval_reference_no, failed_reason, settle_at, settled_at, created_at, updated_at, paid_at_reported, reported_amount, hold_reason, settlement_error)
SELECT id, client_id, wallet_id, payer_id, flow, amount, platform_fee, net_amount, currency, status, acquirer, qr_payload, expired_at, paid_at, retrieval_reference_no, failed_reason, settle_at, settled_at, created_at, updated_at, paid_at_reported, reported_amount, hold_reason, settlement_error FROM payments;
DROP TABLE payments;
ALTER TABLE payments_new RENAME TO payments;
CREATE INDEX payments_client ON payments (client_id, created_at);
CREATE INDEX payments_pending ON payments (expired_at) WHERE status = 'PENDING';
CREATE INDEX payments_unsettled ON payments (settle_at) WHERE status = 'SUCCESS' AND settled_at IS NULL;
CREATE INDEX payments_needing_operator ON payments (id) WHERE settlement_error IS NOT NULL OR hold_reason IS NOT NULL;
-- +goose StatementBegin
CREATE TRIGGER payments_money_insert BEFORE INSERT ON payments
WHEN (typeof(NEW.amount) <> 'integer' OR NEW.amount NOT BETWEEN 0 AND 1000000000000000000)
  OR (typeof(NEW.platform_fee) <> 'integer' OR NEW.platform_fee NOT BETWEEN 0 AND 1000000000000000000)
  OR (typeof(NEW.net_amount) <> 'integer' OR NEW.net_amount NOT BETWEEN 0 AND 1000000000000000000)
  OR (NEW.reported_amount IS NOT NULL AND (typeof(NEW.reported_amount) <> 'integer' OR NEW.reported_amount NOT BETWEEN 0 AND 1000000000000000000))
BEGIN SELECT RAISE(ABORT, 'payments: amount, platform_fee, net_amount, reported_amount must be integers within range (money is integer units, at most 10^18)'); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER payments_money_update BEFORE UPDATE OF amount, platform_fee, net_amount, reported_amount ON payments
WHEN (typeof(NEW.amount) <> 'integer' OR NEW.amount NOT BETWEEN 0 AND 1000000000000000000)
  OR (typeof(NEW.platform_fee) <> 'integer' OR NEW.platform_fee NOT BETWEEN 0 AND 1000000000000000000)
  OR (typeof(NEW.net_amount) <> 'integer' OR NEW.net_amount NOT BETWEEN 0 AND 1000000000000000000)
  OR (NEW.reported_amount IS NOT NULL AND (typeof(NEW.reported_amount) <> 'integer' OR NEW.reported_amount NOT BETWEEN 0 AND 1000000000000000000))
BEGIN SELECT RAISE(ABORT, 'payments: amount, platform_fee, net_amount, reported_amount must be integers within range (money is integer units, at most 10^18)'); END;
-- +goose StatementEnd

COMMIT;
PRAGMA foreign_keys = ON;

-- +goose Down
-- Nothing to undo: NOT NULL on columns that never held NULL changes no
-- behaviour 00008 relied on.
