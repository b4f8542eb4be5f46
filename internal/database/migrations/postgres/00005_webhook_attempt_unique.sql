-- One row per attempt number of an event: a delivery claims its attempt
-- on the event row before sending, and this keeps two deliveries from ever
-- recording the same attempt.

-- +goose Up
-- Before the claim existed, a task that ran late could race the sweep's
-- copy and both recorded the same attempt number: number such events'
-- attempts afresh in the order they were written, and let the event's
-- count cover them, so the index can be built and the next claim follows on.
UPDATE webhook_attempts
SET attempt = (SELECT COUNT(*) FROM webhook_attempts b
               WHERE b.event_id = webhook_attempts.event_id AND b.id <= webhook_attempts.id)
WHERE event_id IN (SELECT event_id FROM webhook_attempts GROUP BY event_id, attempt HAVING COUNT(*) > 1);
UPDATE webhook_events
SET attempts = (SELECT MAX(attempt) FROM webhook_attempts a WHERE a.event_id = webhook_events.id)
WHERE attempts < (SELECT MAX(attempt) FROM webhook_attempts a WHERE a.event_id = webhook_events.id);
CREATE UNIQUE INDEX webhook_attempts_event_attempt ON webhook_attempts (event_id, attempt);

-- +goose Down
DROP INDEX webhook_attempts_event_attempt;
