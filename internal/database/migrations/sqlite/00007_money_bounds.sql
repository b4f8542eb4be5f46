-- The SQLite twin of postgres/00007_money_bounds.sql.
-- SQLite keeps whatever type a value has: an integer sum that overflows
-- becomes a REAL silently (and loses digits), which the service then fails
-- to read. Rebuilding the tables as STRICT would collide with other
-- migrations, so triggers refuse, on every money column of wallets, ledger
-- entries, disbursements and payments, any value that is not an integer
-- within range: ±10^18 units (models.MaxBalance) for balances and entries,
-- 0 to 10^18 for locks and the amounts of payouts and payments.

-- +goose Up
ALTER TABLE payments ADD COLUMN paid_at_reported DATETIME NULL;
ALTER TABLE payments ADD COLUMN reported_amount INTEGER NULL CHECK (reported_amount >= 0);
ALTER TABLE payments ADD COLUMN hold_reason TEXT NULL;
ALTER TABLE payments ADD COLUMN settlement_error TEXT NULL;
CREATE INDEX payments_needing_operator ON payments (id) WHERE settlement_error IS NOT NULL OR hold_reason IS NOT NULL;

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

-- +goose StatementBegin
CREATE TRIGGER ledger_entries_money_insert BEFORE INSERT ON ledger_entries
WHEN (typeof(NEW.amount) <> 'integer' OR NEW.amount NOT BETWEEN -1000000000000000000 AND 1000000000000000000)
BEGIN SELECT RAISE(ABORT, 'ledger_entries: amount must be integers within range (money is integer units, at most 10^18)'); END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER ledger_entries_money_update BEFORE UPDATE OF amount ON ledger_entries
WHEN (typeof(NEW.amount) <> 'integer' OR NEW.amount NOT BETWEEN -1000000000000000000 AND 1000000000000000000)
BEGIN SELECT RAISE(ABORT, 'ledger_entries: amount must be integers within range (money is integer units, at most 10^18)'); END;
-- +goose StatementEnd

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

-- +goose Down
DROP TRIGGER wallets_money_insert;
DROP TRIGGER wallets_money_update;
DROP TRIGGER ledger_entries_money_insert;
DROP TRIGGER ledger_entries_money_update;
DROP TRIGGER disbursements_money_insert;
DROP TRIGGER disbursements_money_update;
DROP TRIGGER payments_money_insert;
DROP TRIGGER payments_money_update;
DROP INDEX payments_needing_operator;
ALTER TABLE payments DROP COLUMN settlement_error;
ALTER TABLE payments DROP COLUMN hold_reason;
ALTER TABLE payments DROP COLUMN reported_amount;
ALTER TABLE payments DROP COLUMN paid_at_reported;
