-- Money bounds (audit points 3 and 6).
-- Wallets hold at most ±10^14 IDR (models.MaxBalance, 10^18 units): far
-- inside BIGINT, so no sum of a balance and an amount can overflow, and a
-- posting past it is refused by the ledger before it reaches these CHECKs,
-- which are the safety net. A balance may be negative (operator
-- adjustments); a lock never is.
-- Payments record what the acquirer reported when it differs from what was
-- applied (paid_at clamped to [created_at, now], an amount other than the
-- price held), and a settlement the ledger refused, for operators.

-- +goose Up
ALTER TABLE wallets
    ADD CONSTRAINT wallets_balance_range CHECK (balance BETWEEN -1000000000000000000 AND 1000000000000000000),
    ADD CONSTRAINT wallets_locked_range CHECK (locked BETWEEN 0 AND 1000000000000000000);

ALTER TABLE payments
    -- The acquirer's paid_at as reported; paid_at is it clamped.
    ADD COLUMN paid_at_reported TIMESTAMPTZ NULL,
    -- An amount the acquirer reported paid that is not the price: the
    -- result was not applied and the payment is held for an operator.
    ADD COLUMN reported_amount BIGINT NULL CHECK (reported_amount >= 0),
    ADD COLUMN hold_reason TEXT NULL,
    -- Why the settlement could not be applied; the sweep leaves the
    -- payment alone until an operator clears it.
    ADD COLUMN settlement_error TEXT NULL;
CREATE INDEX payments_needing_operator ON payments (id) WHERE settlement_error IS NOT NULL OR hold_reason IS NOT NULL;

-- +goose Down
DROP INDEX payments_needing_operator;
ALTER TABLE payments DROP COLUMN settlement_error, DROP COLUMN hold_reason, DROP COLUMN reported_amount, DROP COLUMN paid_at_reported;
ALTER TABLE wallets DROP CONSTRAINT wallets_locked_range, DROP CONSTRAINT wallets_balance_range;
