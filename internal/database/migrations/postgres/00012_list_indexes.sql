-- Merchants list their disbursements newest first, by client, optionally
-- by status or wallet (GET /api/v3/disbursements): each index serves its
-- filter in (created_at, id) order, so a page costs the same at the
-- millionth row as at the first.

-- +goose Up
CREATE INDEX disbursements_client_created ON disbursements (client_id, created_at DESC, id DESC);
CREATE INDEX disbursements_client_status_created ON disbursements (client_id, status, created_at DESC, id DESC);
CREATE INDEX disbursements_wallet_created ON disbursements (wallet_id, created_at DESC, id DESC);
CREATE INDEX disbursements_client_reference ON disbursements (client_id, reference_id);

-- +goose Down
DROP INDEX disbursements_client_reference;
DROP INDEX disbursements_wallet_created;
DROP INDEX disbursements_client_status_created;
DROP INDEX disbursements_client_created;
