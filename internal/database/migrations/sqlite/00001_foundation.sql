-- The SQLite twin of postgres/00001_foundation.sql: the same tables, columns
-- and constraints for `payoutd dev` and tests run without TEST_DATABASE_URL.
-- UUIDs are TEXT; timestamps are DATETIME (the driver parses those back).

-- +goose Up
CREATE TABLE clients (
    id                  TEXT PRIMARY KEY,
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
    updated_at          DATETIME NOT NULL
);

CREATE TABLE credentials (
    id                  TEXT PRIMARY KEY,
    client_id           TEXT NOT NULL REFERENCES clients (id),
    api_key_hash        TEXT NOT NULL UNIQUE,
    api_key_prefix      TEXT NOT NULL,
    signing_secret_enc  TEXT NULL,
    callback_secret_enc TEXT NOT NULL,
    created_at          DATETIME NOT NULL,
    revoked_at          DATETIME NULL
);
CREATE UNIQUE INDEX credentials_one_active ON credentials (client_id) WHERE revoked_at IS NULL;

CREATE TABLE wallets (
    id         TEXT PRIMARY KEY,
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
CREATE INDEX wallets_client ON wallets (client_id, created_at);
CREATE UNIQUE INDEX wallets_one_default ON wallets (client_id) WHERE is_default;

CREATE TABLE ledger_transactions (
    id         TEXT PRIMARY KEY,
    kind       TEXT NOT NULL,
    memo       TEXT NOT NULL DEFAULT '',
    reference  TEXT NOT NULL DEFAULT '',
    created_at DATETIME NOT NULL
);

CREATE TABLE ledger_entries (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    transaction_id TEXT NOT NULL REFERENCES ledger_transactions (id),
    account        TEXT NOT NULL,
    amount         INTEGER NOT NULL CHECK (amount <> 0),
    created_at     DATETIME NOT NULL
);
CREATE INDEX ledger_entries_account ON ledger_entries (account);
CREATE INDEX ledger_entries_transaction ON ledger_entries (transaction_id);

-- +goose StatementBegin
CREATE TRIGGER ledger_entries_no_update BEFORE UPDATE ON ledger_entries
BEGIN SELECT RAISE(ABORT, 'the ledger is append-only: UPDATE on ledger_entries refused'); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER ledger_entries_no_delete BEFORE DELETE ON ledger_entries
BEGIN SELECT RAISE(ABORT, 'the ledger is append-only: DELETE on ledger_entries refused'); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER ledger_transactions_no_update BEFORE UPDATE ON ledger_transactions
BEGIN SELECT RAISE(ABORT, 'the ledger is append-only: UPDATE on ledger_transactions refused'); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER ledger_transactions_no_delete BEFORE DELETE ON ledger_transactions
BEGIN SELECT RAISE(ABORT, 'the ledger is append-only: DELETE on ledger_transactions refused'); END;
-- +goose StatementEnd

-- +goose Down
DROP TABLE ledger_entries;
DROP TABLE ledger_transactions;
DROP TABLE wallets;
DROP TABLE credentials;
DROP TABLE clients;
