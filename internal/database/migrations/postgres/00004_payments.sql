-- Payments collected through a QRIS checkout, their audit trail, and the
-- acquirer results that arrived too late to count (kept for operators).

-- +goose Up
CREATE TABLE payments (
    id                     UUID PRIMARY KEY,
    client_id              UUID NOT NULL REFERENCES clients (id),
    -- The client's default wallet when the payment was created: the
    -- settlement is credited there.
    wallet_id              UUID NOT NULL REFERENCES wallets (id),
    payer_id               TEXT NOT NULL CHECK (length(payer_id) BETWEEN 1 AND 64),
    flow                   TEXT NOT NULL CHECK (flow IN ('embed')),
    amount                 BIGINT NOT NULL CHECK (amount > 0),
    platform_fee           BIGINT NOT NULL CHECK (platform_fee >= 0),
    net_amount             BIGINT NOT NULL CHECK (net_amount >= 0),
    currency               TEXT NOT NULL DEFAULT 'IDR',
    status                 TEXT NOT NULL CHECK (status IN ('PENDING', 'SUCCESS', 'EXPIRED', 'FAILED')),
    acquirer               TEXT NOT NULL,
    qr_payload             TEXT NOT NULL,
    expired_at             TIMESTAMPTZ NOT NULL,
    paid_at                TIMESTAMPTZ NULL,
    retrieval_reference_no TEXT NULL,
    failed_reason          TEXT NULL,
    -- When the settlement is due (next business day), and when it happened.
    settle_at              TIMESTAMPTZ NULL,
    settled_at             TIMESTAMPTZ NULL,
    created_at             TIMESTAMPTZ NOT NULL,
    updated_at             TIMESTAMPTZ NOT NULL,
    CHECK (amount = platform_fee + net_amount),
    CHECK (settled_at IS NULL OR status = 'SUCCESS')
);
CREATE INDEX payments_client ON payments (client_id, created_at);
CREATE INDEX payments_pending ON payments (expired_at) WHERE status = 'PENDING';
CREATE INDEX payments_unsettled ON payments (settle_at) WHERE status = 'SUCCESS' AND settled_at IS NULL;

CREATE TABLE payment_transitions (
    id          BIGSERIAL PRIMARY KEY,
    payment_id  UUID NOT NULL REFERENCES payments (id),
    from_status TEXT NOT NULL,
    to_status   TEXT NOT NULL,
    reason      TEXT NOT NULL DEFAULT '',
    created_at  TIMESTAMPTZ NOT NULL
);
CREATE INDEX payment_transitions_payment ON payment_transitions (payment_id, id);

-- A result the acquirer reported for a payment no longer PENDING (paid
-- after it expired, say): never applied, never dropped.
CREATE TABLE payment_late_results (
    id                     BIGSERIAL PRIMARY KEY,
    payment_id             UUID NOT NULL REFERENCES payments (id),
    payment_status         TEXT NOT NULL,
    reported_status        TEXT NOT NULL,
    retrieval_reference_no TEXT NULL,
    source                 TEXT NOT NULL,
    received_at            TIMESTAMPTZ NOT NULL
);
CREATE INDEX payment_late_results_payment ON payment_late_results (payment_id);

-- +goose Down
DROP TABLE payment_late_results;
DROP TABLE payment_transitions;
DROP TABLE payments;
