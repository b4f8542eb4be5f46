-- The signature of every create that moves money, unique per client, and
-- the client setting that refuses v1 signatures (see the PostgreSQL
-- migration of the same number).

-- +goose Up
ALTER TABLE clients ADD COLUMN require_signature_v2 BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE disbursements ADD COLUMN request_signature TEXT;
ALTER TABLE payments ADD COLUMN request_signature TEXT;
CREATE UNIQUE INDEX IF NOT EXISTS disbursements_request_signature ON disbursements (client_id, request_signature)
    WHERE request_signature IS NOT NULL;
CREATE UNIQUE INDEX IF NOT EXISTS payments_request_signature ON payments (client_id, request_signature)
    WHERE request_signature IS NOT NULL;

-- +goose Down
DROP INDEX IF EXISTS payments_request_signature;
DROP INDEX IF EXISTS disbursements_request_signature;
ALTER TABLE payments DROP COLUMN request_signature;
ALTER TABLE disbursements DROP COLUMN request_signature;
ALTER TABLE clients DROP COLUMN require_signature_v2;
