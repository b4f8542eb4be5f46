-- Merchant webhook events and every attempt to deliver them. An event is
-- written in the transaction of the state change that causes it, with the
-- exact body it will carry; the row is its own outbox.

-- +goose Up
CREATE TABLE webhook_events (
    id              UUID PRIMARY KEY,
    client_id       UUID NOT NULL REFERENCES clients (id),
    event           TEXT NOT NULL,
    -- The disbursement or payment the event is about; its events are
    -- delivered in sequence order.
    subject_id      UUID NOT NULL,
    sequence        INTEGER NOT NULL CHECK (sequence > 0),
    -- Which of the client's URLs receives it: 'payout' or 'payment'.
    target          TEXT NOT NULL CHECK (target IN ('payout', 'payment')),
    body            TEXT NOT NULL,
    state           TEXT NOT NULL CHECK (state IN ('pending', 'delivered', 'failed', 'no_url')),
    attempts        INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    next_attempt_at TIMESTAMPTZ NULL,
    delivered_at    TIMESTAMPTZ NULL,
    created_at      TIMESTAMPTZ NOT NULL,
    updated_at      TIMESTAMPTZ NOT NULL,
    UNIQUE (subject_id, sequence)
);
CREATE INDEX webhook_events_client ON webhook_events (client_id, created_at);
CREATE INDEX webhook_events_due ON webhook_events (next_attempt_at) WHERE state = 'pending';

CREATE TABLE webhook_attempts (
    id              BIGSERIAL PRIMARY KEY,
    event_id        UUID NOT NULL REFERENCES webhook_events (id),
    attempt         INTEGER NOT NULL CHECK (attempt > 0),
    url             TEXT NOT NULL,
    started_at      TIMESTAMPTZ NOT NULL,
    status_code     INTEGER NULL,
    latency_ms      BIGINT NOT NULL CHECK (latency_ms >= 0),
    error           TEXT NULL,
    next_attempt_at TIMESTAMPTZ NULL
);
CREATE INDEX webhook_attempts_event ON webhook_attempts (event_id, id);

-- +goose Down
DROP TABLE webhook_attempts;
DROP TABLE webhook_events;
