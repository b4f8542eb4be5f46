-- Clients, credentials, wallets and the append-only double-entry ledger.
-- Money is BIGINT in ten-thousandths of a rupiah (scale 4).

-- +goose Up
CREATE TABLE clients (
    id                  UUID PRIMARY KEY,
    name                TEXT NOT NULL CHECK (name <> ''),
    kind                TEXT NOT NULL CHECK (kind IN ('merchant', 'holding')),
    environment         TEXT NOT NULL CHECK (environment IN ('production', 'staging')),
    allowed_ips         TEXT NOT NULL DEFAULT '',
    payout_webhook_url  TEXT NOT NULL DEFAULT '',
    payment_webhook_url TEXT NOT NULL DEFAULT '',
    withdrawals         TEXT NOT NULL DEFAULT 'active' CHECK (withdrawals IN ('active', 'suspended')),
    payment_fee_bps     BIGINT NOT NULL DEFAULT 70 CHECK (payment_fee_bps BETWEEN 0 AND 10000),
    bifast_fee          BIGINT NOT NULL DEFAULT 25000000 CHECK (bifast_fee >= 0),
    rtol_fee            BIGINT NOT NULL DEFAULT 65000000 CHECK (rtol_fee >= 0),
    bifast_min_net      BIGINT NOT NULL DEFAULT 100000000 CHECK (bifast_min_net >= 0),
    rtol_min_net        BIGINT NOT NULL DEFAULT 100000000 CHECK (rtol_min_net >= 0),
    review_threshold    BIGINT NULL CHECK (review_threshold > 0),
    created_at          TIMESTAMPTZ NOT NULL,
    updated_at          TIMESTAMPTZ NOT NULL
);

CREATE TABLE credentials (
    id                  UUID PRIMARY KEY,
    client_id           UUID NOT NULL REFERENCES clients (id),
    api_key_hash        TEXT NOT NULL UNIQUE,
    api_key_prefix      TEXT NOT NULL,
    signing_secret_enc  TEXT NULL,
    callback_secret_enc TEXT NOT NULL,
    created_at          TIMESTAMPTZ NOT NULL,
    revoked_at          TIMESTAMPTZ NULL
);
-- At most one active credential per client.
CREATE UNIQUE INDEX credentials_one_active ON credentials (client_id) WHERE revoked_at IS NULL;

CREATE TABLE wallets (
    id         UUID PRIMARY KEY,
    client_id  UUID NOT NULL REFERENCES clients (id),
    name       TEXT NOT NULL CHECK (name <> ''),
    vendor     TEXT NOT NULL,
    state      TEXT NOT NULL CHECK (state IN ('provisioning', 'active')),
    is_default BOOLEAN NOT NULL DEFAULT FALSE,
    balance    BIGINT NOT NULL DEFAULT 0,
    locked     BIGINT NOT NULL DEFAULT 0 CHECK (locked >= 0),
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX wallets_client ON wallets (client_id, created_at);
-- At most one default wallet per client.
CREATE UNIQUE INDEX wallets_one_default ON wallets (client_id) WHERE is_default;

CREATE TABLE ledger_transactions (
    id         UUID PRIMARY KEY,
    kind       TEXT NOT NULL,
    memo       TEXT NOT NULL DEFAULT '',
    reference  TEXT NOT NULL DEFAULT '',
    created_at TIMESTAMPTZ NOT NULL
);

CREATE TABLE ledger_entries (
    id             BIGSERIAL PRIMARY KEY,
    transaction_id UUID NOT NULL REFERENCES ledger_transactions (id),
    account        TEXT NOT NULL,
    amount         BIGINT NOT NULL CHECK (amount <> 0),
    created_at     TIMESTAMPTZ NOT NULL
);
CREATE INDEX ledger_entries_account ON ledger_entries (account);
CREATE INDEX ledger_entries_transaction ON ledger_entries (transaction_id);

-- The ledger is append-only: an entry or a transaction is never changed or removed.
-- +goose StatementBegin
CREATE FUNCTION ledger_append_only() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'the ledger is append-only: % on % refused', TG_OP, TG_TABLE_NAME;
END;
$$ LANGUAGE plpgsql;
-- +goose StatementEnd
CREATE TRIGGER ledger_entries_append_only BEFORE UPDATE OR DELETE ON ledger_entries
    FOR EACH ROW EXECUTE FUNCTION ledger_append_only();
CREATE TRIGGER ledger_transactions_append_only BEFORE UPDATE OR DELETE ON ledger_transactions
    FOR EACH ROW EXECUTE FUNCTION ledger_append_only();

-- +goose Down
DROP TABLE ledger_entries;
DROP TABLE ledger_transactions;
DROP FUNCTION ledger_append_only();
DROP TABLE wallets;
DROP TABLE credentials;
DROP TABLE clients;
