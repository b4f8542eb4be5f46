-- What the SNAP BI adapter (vendors/snap) keeps about each transfer it
-- sent, so that the status inquiry of any process (api, worker, admin), and
-- of the same process after a restart, names the transfer as the bank
-- knows it: the X-EXTERNAL-ID and transactionDate sent, and the bank's
-- referenceNo once answered. One row per bank and payout reference.

-- +goose Up
CREATE TABLE snap_transfers (
    bank             TEXT NOT NULL CHECK (bank <> ''),
    reference        TEXT NOT NULL CHECK (reference <> ''),
    external_id      TEXT NOT NULL CHECK (external_id <> ''),
    transaction_date TEXT NOT NULL,
    reference_no     TEXT NOT NULL DEFAULT '',
    created_at       TIMESTAMPTZ NOT NULL,
    updated_at       TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (bank, reference)
);

-- +goose Down
DROP TABLE snap_transfers;
