-- Merchants list their disbursements newest first, by client, optionally
-- by status or wallet (GET /api/v3/disbursements): each index serves its
-- filter in (created_at, id) order, so a page costs the same at the
-- millionth row as at the first.

-- Payments likewise (GET /api/v3/payments).

-- +goose Up
CREATE INDEX disbursements_client_created ON disbursements (client_id, created_at DESC, id DESC);
CREATE INDEX disbursements_client_status_created ON disbursements (client_id, status, created_at DESC, id DESC);
CREATE INDEX disbursements_wallet_created ON disbursements (wallet_id, created_at DESC, id DESC);
CREATE INDEX disbursements_client_reference ON disbursements (client_id, reference_id);
CREATE INDEX payments_client_created ON payments (client_id, created_at DESC, id DESC);
CREATE INDEX payments_client_status_created ON payments (client_id, status, created_at DESC, id DESC);
CREATE INDEX payments_client_payer_created ON payments (client_id, payer_id, created_at DESC, id DESC);

-- +goose Down
DROP INDEX payments_client_payer_created;
DROP INDEX payments_client_status_created;
DROP INDEX payments_client_created;
DROP INDEX disbursements_client_reference;
DROP INDEX disbursements_wallet_created;
DROP INDEX disbursements_client_status_created;
DROP INDEX disbursements_client_created;
