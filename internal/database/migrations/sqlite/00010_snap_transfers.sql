-- The SQLite twin of postgres/00010_snap_transfers.sql: what the SNAP BI
-- adapter keeps about each transfer it sent, shared by every process.

-- +goose Up
CREATE TABLE snap_transfers (
    bank             TEXT NOT NULL CHECK (bank <> ''),
    reference        TEXT NOT NULL CHECK (reference <> ''),
    external_id      TEXT NOT NULL CHECK (external_id <> ''),
    transaction_date TEXT NOT NULL,
    reference_no     TEXT NOT NULL DEFAULT '',
    created_at       DATETIME NOT NULL,
    updated_at       DATETIME NOT NULL,
    PRIMARY KEY (bank, reference)
);

-- +goose Down
DROP TABLE snap_transfers;
