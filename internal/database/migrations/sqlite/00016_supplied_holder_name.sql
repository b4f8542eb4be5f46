-- The account_holder_name a merchant supplies on a create (see the
-- PostgreSQL migration of the same number).

-- +goose Up
ALTER TABLE disbursements ADD COLUMN supplied_holder_name TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE disbursements DROP COLUMN supplied_holder_name;
