-- A wallet's statement (GET /api/v3/wallets/{id}/transactions): one line
-- per change of its settled balance or its lock, with the balance and lock
-- after it, written by the ledger in the same statement or transaction as
-- the change itself (ledger/wallets.go). seq numbers a wallet's lines
-- without gaps: wallets.statement_seq is the last one, advanced by the
-- same row update that changes the money, so the line order is the order
-- in which the row's changes committed. created_at never goes backwards
-- along seq (the update takes the later of its clock and the wallet's
-- updated_at), so a page in time order costs the same at the millionth
-- line as at the first (wallet_statement_time).
--
-- Wallets that already hold money start with one opening_balance line.

-- +goose Up
ALTER TABLE wallets ADD COLUMN statement_seq BIGINT NOT NULL DEFAULT 0 CHECK (statement_seq >= 0);

CREATE TABLE wallet_statement (
    wallet_id             UUID NOT NULL REFERENCES wallets (id),
    seq                   BIGINT NOT NULL CHECK (seq > 0),
    kind                  TEXT NOT NULL CHECK (kind IN ('opening_balance', 'payment_settled', 'payout_locked',
                              'payout_released', 'payout_debited', 'fee', 'payout_returned', 'adjustment')),
    balance_change        BIGINT NOT NULL,
    locked_change         BIGINT NOT NULL,
    balance_after         BIGINT NOT NULL CHECK (balance_after BETWEEN -1000000000000000000 AND 1000000000000000000),
    locked_after          BIGINT NOT NULL CHECK (locked_after BETWEEN 0 AND 1000000000000000000),
    disbursement_id       UUID NULL,
    payment_id            UUID NULL,
    ledger_transaction_id UUID NULL,
    memo                  TEXT NOT NULL DEFAULT '',
    created_at            TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (wallet_id, seq)
);
CREATE INDEX wallet_statement_time ON wallet_statement (wallet_id, created_at DESC, seq DESC);

INSERT INTO wallet_statement (wallet_id, seq, kind, balance_change, locked_change, balance_after, locked_after, memo, created_at)
SELECT id, 1, 'opening_balance', balance, locked, balance, locked, 'balance when statements began', updated_at
FROM wallets WHERE balance <> 0 OR locked <> 0;
UPDATE wallets SET statement_seq = 1 WHERE balance <> 0 OR locked <> 0;

-- +goose Down
DROP TABLE wallet_statement;
ALTER TABLE wallets DROP COLUMN statement_seq;
