-- The SQLite twin of postgres/00008_sealed_webhook_urls.sql.
-- Webhook URLs may carry a merchant's credentials (user:password, a token in
-- the path or the query): they are stored sealed (AES-GCM bound to the client
-- and the field), and the plain columns keep only a display form
-- (scheme://host/…). Rows of earlier versions keep their plain URL with an
-- empty sealed column until `payoutd admin secrets rotate-key` seals it.

-- +goose Up
ALTER TABLE clients ADD COLUMN payout_webhook_url_enc TEXT NOT NULL DEFAULT '';
ALTER TABLE clients ADD COLUMN payment_webhook_url_enc TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE clients DROP COLUMN payment_webhook_url_enc;
ALTER TABLE clients DROP COLUMN payout_webhook_url_enc;
