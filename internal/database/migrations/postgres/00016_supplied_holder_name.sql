-- The account_holder_name a merchant supplies on a create, kept beside the
-- name the payout is sent with (account_holder_name: the inquiry's, else
-- this one) so that a replay with the same Idempotency-Key is compared
-- with what the first request said. A constant default adds the column
-- without rewriting the table.

-- +goose Up
ALTER TABLE disbursements ADD COLUMN IF NOT EXISTS supplied_holder_name TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE disbursements DROP COLUMN IF EXISTS supplied_holder_name;
