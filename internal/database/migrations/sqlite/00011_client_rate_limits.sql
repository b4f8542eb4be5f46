-- A client's own request rates on the merchant routes (requests per
-- second, writes and reads apart). NULL: the service's default
-- (CLIENT_WRITE_RATE_LIMIT, CLIENT_READ_RATE_LIMIT); 0: unlimited.

-- +goose Up
ALTER TABLE clients ADD COLUMN write_rate_limit INTEGER CHECK (write_rate_limit >= 0);
ALTER TABLE clients ADD COLUMN read_rate_limit INTEGER CHECK (read_rate_limit >= 0);

-- +goose Down
ALTER TABLE clients DROP COLUMN read_rate_limit;
ALTER TABLE clients DROP COLUMN write_rate_limit;
