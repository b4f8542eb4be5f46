package pgdriver

import (
	"fmt"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/payoutd/payoutd/models"
)

// recordAllSQL is RecordWebhookEvents' one statement: $1 to $6 the
// events' ids, clients, names, subjects, targets and bodies, in order; $7
// models.TargetPayment, $8 and $9 the states pending and no_url, $10 the
// time. Each subject's events are numbered in the order given after its
// last stored one (rows of the statement itself are not yet visible to
// its max), and an event of a client without a URL for its target is
// no_url with no due time.
const recordAllSQL = `WITH e AS (
	        SELECT e.*, row_number() OVER (PARTITION BY e.subject_id ORDER BY e.ord) AS n
	        FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::uuid[], $5::text[], $6::text[])
	            WITH ORDINALITY AS e(id, client_id, event, subject_id, target, body, ord)
	    ), x AS (
	        SELECT e.*, CASE WHEN e.target = $7 THEN c.payment_webhook_url ELSE c.payout_webhook_url END = '' AS no_url
	        FROM e JOIN clients c ON c.id = e.client_id
	    )
	    INSERT INTO webhook_events (id, client_id, event, subject_id, sequence, target, body, state, attempts,
	        next_attempt_at, delivered_at, created_at, updated_at)
	    SELECT x.id, x.client_id, x.event, x.subject_id,
	        COALESCE((SELECT max(w.sequence) FROM webhook_events w WHERE w.subject_id = x.subject_id), 0) + x.n,
	        x.target, x.body, CASE WHEN x.no_url THEN $9 ELSE $8 END, 0,
	        CASE WHEN x.no_url THEN NULL ELSE $10::timestamptz END, NULL, $10, $10
	    FROM x ORDER BY x.ord
	    RETURNING id, sequence, state`

// RecordWebhookEvents is one statement (recordAllSQL), which reads the
// clients' URLs and the subjects' last numbers itself: every round trip
// inside a move's transaction is time its rows stay locked. It runs on
// tx's connection outside gorm, which would expand the arrays.
func (Driver) RecordWebhookEvents(tx *gorm.DB, events []models.WebhookEvent, now time.Time) error {
	n := len(events)
	ids, clients, subjects := make([][16]byte, n), make([][16]byte, n), make([][16]byte, n)
	names, targets, bodies := make([]string, n), make([]string, n), make([]string, n)
	for i, e := range events {
		ids[i], clients[i], subjects[i] = e.ID, e.ClientID, e.SubjectID
		names[i], targets[i], bodies[i] = e.Event, string(e.Target), e.Body
	}
	rows, err := QueryDirect(tx.Statement.Context, tx, recordAllSQL, ids, clients, names, subjects, targets, bodies,
		string(models.TargetPayment), string(models.WebhookPending), string(models.WebhookNoURL), now.UTC())
	if err != nil {
		return models.TranslateDBError(tx, err)
	}
	defer rows.Close()
	byID := make(map[uuid.UUID]*models.WebhookEvent, n)
	for i := range events {
		byID[events[i].ID] = &events[i]
	}
	stored := 0
	for rows.Next() {
		var id uuid.UUID
		var sequence int
		var state string
		if err := rows.Scan(&id, &sequence, &state); err != nil {
			return models.TranslateDBError(tx, err)
		}
		e := byID[id]
		e.Sequence, e.State = sequence, models.WebhookState(state)
		if e.State == models.WebhookNoURL {
			e.NextAttemptAt = nil
		}
		stored++
	}
	if err := rows.Err(); err != nil {
		return models.TranslateDBError(tx, err)
	}
	if stored != n {
		// The join found no client for some: what the steps say.
		for _, e := range events {
			if e.Sequence == 0 {
				return fmt.Errorf("webhook event for client %s: %w", e.ClientID, gorm.ErrRecordNotFound)
			}
		}
	}
	return nil
}
