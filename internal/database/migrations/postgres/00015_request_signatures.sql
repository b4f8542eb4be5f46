-- The signature of every create that moves money (a disbursement, a
-- payment) is kept on the row it created, unique per client. The used-once
-- record in Redis is the fast first check; this one is written in the
-- same statement as the create, so losing Redis's records (an eviction, a
-- failover that drops recent writes) cannot let one signature create twice.
-- A client may also be made to refuse v1 signatures (require_signature_v2):
-- v1 covers only t and the body.
-- The indexes are built concurrently: creates keep writing while they
-- build. A build cut short leaves an invalid index behind, so a rerun drops
-- it first.

-- +goose NO TRANSACTION
-- +goose Up
ALTER TABLE clients ADD COLUMN IF NOT EXISTS require_signature_v2 BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE disbursements ADD COLUMN IF NOT EXISTS request_signature TEXT;
ALTER TABLE payments ADD COLUMN IF NOT EXISTS request_signature TEXT;
DROP INDEX CONCURRENTLY IF EXISTS disbursements_request_signature;
CREATE UNIQUE INDEX CONCURRENTLY disbursements_request_signature ON disbursements (client_id, request_signature)
    WHERE request_signature IS NOT NULL;
DROP INDEX CONCURRENTLY IF EXISTS payments_request_signature;
CREATE UNIQUE INDEX CONCURRENTLY payments_request_signature ON payments (client_id, request_signature)
    WHERE request_signature IS NOT NULL;

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS payments_request_signature;
DROP INDEX CONCURRENTLY IF EXISTS disbursements_request_signature;
ALTER TABLE payments DROP COLUMN IF EXISTS request_signature;
ALTER TABLE disbursements DROP COLUMN IF EXISTS request_signature;
ALTER TABLE clients DROP COLUMN IF EXISTS require_signature_v2;
