-- A wallet's statement: see the PostgreSQL migration of the same number.

-- +goose Up
ALTER TABLE wallets ADD COLUMN statement_seq INTEGER NOT NULL DEFAULT 0 CHECK (statement_seq >= 0);

CREATE TABLE wallet_statement (
    wallet_id             TEXT NOT NULL REFERENCES wallets (id),
    seq                   INTEGER NOT NULL CHECK (seq > 0),
    kind                  TEXT NOT NULL CHECK (kind IN ('opening_balance', 'payment_settled', 'payout_locked',
                              'payout_released', 'payout_debited', 'fee', 'payout_returned', 'adjustment')),
    balance_change        INTEGER NOT NULL,
    locked_change         INTEGER NOT NULL,
    balance_after         INTEGER NOT NULL CHECK (balance_after BETWEEN -1000000000000000000 AND 1000000000000000000),
    locked_after          INTEGER NOT NULL CHECK (locked_after BETWEEN 0 AND 1000000000000000000),
    disbursement_id       TEXT NULL,
    payment_id            TEXT NULL,
    ledger_transaction_id TEXT NULL,
    memo                  TEXT NOT NULL DEFAULT '',
    created_at            DATETIME NOT NULL,
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
