package webhooks

import (
	"bytes"
	"context"
	"database/sql/driver"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/payoutd/payoutd/internal/groupcommit"
	"github.com/payoutd/payoutd/models"
)

// On PostgreSQL the deliveries that run at the same moment (the worker runs
// many tasks at once, and a batch of finished payouts makes a burst of
// events) share their two statements: one claims all their events, one
// records all their outcomes, a commit each for the group. One delivery
// alone runs them at once, as a group of one. The POSTs stay each
// delivery's own. With half the merchants hooked, each event's
// own claim and outcome statements were more of the database's work than
// the payout they announced.

// claimRequest is one delivery's claimReady: the event's id, and the claim
// when the event was the delivery's to send at once.
type claimRequest struct {
	id    uuid.UUID
	claim *readyClaim
	err   error
}

// outcomeRequest is one delivery's outcome and what recording it found.
type outcomeRequest struct {
	in                  outcomeInput
	settled, laterWaits bool
	err                 error
}

// outcomeInput is one row of outcomeSQL's input, as JSON.
type outcomeInput struct {
	EventID       uuid.UUID           `json:"event_id"`
	Attempt       int                 `json:"attempt"`
	URL           string              `json:"url"`
	StartedAt     time.Time           `json:"started_at"`
	StatusCode    *int                `json:"status_code"`
	LatencyMS     int64               `json:"latency_ms"`
	Error         *string             `json:"error"`
	NextAttemptAt *time.Time          `json:"next_attempt_at"`
	State         models.WebhookState `json:"state"`
	DeliveredAt   *time.Time          `json:"delivered_at"`
	SubjectID     uuid.UUID           `json:"subject_id"`
	Sequence      int                 `json:"sequence"`
}

// maxGroup is the most deliveries one statement carries; groupLeaders how
// many statements of a kind may be out at once, the second only behind a
// backlog of groupBusyAt (groupcommit.Group.BusyAt).
const maxGroup, groupLeaders, groupBusyAt = 64, 2, 8

// groupTimeout bounds a group's statement: its deliveries wait for it
// whatever their own contexts say (a claim made must reach its delivery).
const groupTimeout = 15 * time.Second

func (d *Deliverer) startGroups() {
	d.grouped = true
	d.claims = groupcommit.Group[*claimRequest]{MaxLeaders: groupLeaders, BusyAt: groupBusyAt,
		Next: inEventOrder(func(r *claimRequest) uuid.UUID { return r.id }), Run: d.claimGroup,
		Observe: func(size int, took time.Duration) { d.metrics.GroupRun("webhook_claims", size, took) }}
	d.outcomes = groupcommit.Group[*outcomeRequest]{MaxLeaders: groupLeaders, BusyAt: groupBusyAt,
		Next: inEventOrder(func(r *outcomeRequest) uuid.UUID { return r.in.EventID }), Run: d.outcomeGroup,
		Observe: func(size int, took time.Duration) { d.metrics.GroupRun("webhook_outcomes", size, took) }}
}

// inEventOrder takes a group off the queue as groupcommit.First does and
// orders it by event id, so that the statements of two worker processes
// take their rows' locks in one order (the primary key's, as an index scan
// of = ANY does anyway; the outcomes' join usually follows its input) and
// one waits for the other instead of both deadlocking. Two processes hold
// the same events at once only when a task and its sweep copy meet.
func inEventOrder[T any](eventOf func(T) uuid.UUID) func(queue []*groupcommit.Request[T]) (group, rest []*groupcommit.Request[T]) {
	first := groupcommit.First[T](maxGroup)
	return func(queue []*groupcommit.Request[T]) (group, rest []*groupcommit.Request[T]) {
		group, rest = first(queue)
		slices.SortStableFunc(group, func(a, b *groupcommit.Request[T]) int {
			x, y := eventOf(a.Item), eventOf(b.Item)
			return bytes.Compare(x[:], y[:])
		})
		return group, rest
	}
}

// claimReady is the usual delivery's first statement, on PostgreSQL: the
// event claimed (as claim does) only when it is due, no earlier event of
// its subject is pending and its client has a URL for it, returned with
// that client's URLs and live credential. It returns nil when any of that
// does not hold (or on SQLite): then the delivery goes the long way
// (eventToDeliver, the hold, recipient, claim), which says why. Most
// deliveries are one claim, one POST and one outcome instead of five
// statements and the POST.
func (d *Deliverer) claimReady(_ context.Context, id uuid.UUID) (*readyClaim, error) {
	if !d.grouped {
		return nil, nil
	}
	req := &claimRequest{id: id}
	if err := d.claims.Do(req); err != nil {
		return nil, err
	}
	return req.claim, req.err
}

// claimReadySQL is claimReady's statement for a group of event ids
// (@ids), and claimOneSQL for a lone delivery's (@id): claim's update
// with the long way's conditions as subqueries, and recipient's join on
// what it returns.
var (
	claimReadySQL = claimSQL("e.id = ANY(CAST(@ids AS uuid[]))")
	claimOneSQL   = claimSQL("e.id = @id")
)

func claimSQL(events string) string {
	return `WITH claimed AS (
	    UPDATE webhook_events e SET attempts = e.attempts + 1, next_attempt_at = @lease, updated_at = @now
	    WHERE ` + events + ` AND e.state = @pending AND (e.next_attempt_at IS NULL OR e.next_attempt_at <= @now)
	      AND NOT EXISTS (SELECT 1 FROM webhook_events p
	                      WHERE p.subject_id = e.subject_id AND p.sequence < e.sequence AND p.state = @pending)
	      AND EXISTS (SELECT 1 FROM clients c WHERE c.id = e.client_id
	                    AND CASE WHEN e.target = @payment THEN c.payment_webhook_url_enc <> '' OR c.payment_webhook_url <> ''
	                             ELSE c.payout_webhook_url_enc <> '' OR c.payout_webhook_url <> '' END)
	    RETURNING e.*
	)
	SELECT claimed.*, c.payout_webhook_url, c.payment_webhook_url, c.payout_webhook_url_enc, c.payment_webhook_url_enc,
	       cr.id AS credential_id, cr.callback_secret_enc
	FROM claimed JOIN clients c ON c.id = claimed.client_id
	LEFT JOIN credentials cr ON cr.client_id = c.id AND cr.revoked_at IS NULL`
}

// claimedRow is a row of claimReadySQL.
type claimedRow struct {
	models.WebhookEvent `gorm:"embedded"`
	Recipient           recipientRow `gorm:"embedded"`
}

// claimGroup claims a group's events in one statement. Two deliveries of
// one event in a group (a late task and the sweep's copy) get one claim:
// the first; the other finds the event leased and ends.
func (d *Deliverer) claimGroup(group []*groupcommit.Request[*claimRequest]) {
	ctx, cancel := context.WithTimeout(context.Background(), groupTimeout)
	defer cancel()
	ids := make(uuidArray, len(group))
	for i, req := range group {
		ids[i] = req.Item.id
	}
	now := d.now().UTC()
	query, args := claimReadySQL, map[string]any{"ids": ids, "pending": models.WebhookPending,
		"payment": models.TargetPayment, "now": now, "lease": now.Add(d.timeout + claimLease)}
	if len(group) == 1 { // a lone delivery: its id as a scalar, cheaper to plan and run
		query, args["id"] = claimOneSQL, ids[0]
	}
	var rows []claimedRow
	err := d.db.WithContext(ctx).Raw(query, args).Scan(&rows).Error
	claimed := make(map[uuid.UUID]*claimedRow, len(rows))
	for i := range rows {
		claimed[rows[i].ID] = &rows[i]
	}
	for _, req := range group {
		if row := claimed[req.Item.id]; err == nil && row != nil {
			delete(claimed, req.Item.id)
			req.Item.claim = row.readyClaim()
		}
		req.Item.err = err
		req.Answer(nil)
	}
}

func (r *claimedRow) readyClaim() *readyClaim {
	ev := r.WebhookEvent
	ev.Attempts-- // as before the claim, as the long way's event
	return &readyClaim{ev: &ev, attempt: ev.Attempts + 1, row: r.Recipient}
}

// writeOutcomeGrouped is writeOutcome on PostgreSQL.
func (d *Deliverer) writeOutcomeGrouped(ev *models.WebhookEvent, row models.WebhookAttempt,
	state models.WebhookState, deliveredAt *time.Time) (settled, laterWaits bool, err error) {
	req := &outcomeRequest{in: outcomeInput{EventID: ev.ID, Attempt: row.Attempt, URL: row.URL,
		StartedAt: row.StartedAt, StatusCode: row.StatusCode, LatencyMS: row.LatencyMS, Error: row.Error,
		NextAttemptAt: row.NextAttemptAt, State: state, DeliveredAt: deliveredAt, SubjectID: ev.SubjectID, Sequence: ev.Sequence}}
	if err := d.outcomes.Do(req); err != nil {
		return false, false, err
	}
	return req.settled, req.laterWaits, req.err
}

// outcomeSQL records a group's outcomes (@input, a JSON array of
// outcomeInput): the attempts' rows, each event's new state while it is
// still pending (an operator's redelivery may have settled it meanwhile),
// and whether a later event of its subject waits. A later event committed
// while the statement runs is not seen: it waits out its hold, as one
// committed between wakeNext's query and its update would.
const outcomeSQL = `WITH input AS (
	    SELECT * FROM jsonb_to_recordset(CAST(@input AS jsonb)) AS i(event_id uuid, attempt int, url text,
	        started_at timestamptz, status_code int, latency_ms bigint, error text, next_attempt_at timestamptz,
	        state text, delivered_at timestamptz, subject_id uuid, sequence int)
	), attempts AS (
	    INSERT INTO webhook_attempts (event_id, attempt, url, started_at, status_code, latency_ms, error, next_attempt_at)
	    SELECT event_id, attempt, url, started_at, status_code, latency_ms, error, next_attempt_at FROM input
	), outcomes AS (
	    UPDATE webhook_events e SET state = i.state, next_attempt_at = i.next_attempt_at, updated_at = @now,
	           delivered_at = COALESCE(i.delivered_at, e.delivered_at)
	    FROM input i WHERE e.id = i.event_id AND e.state = @pending
	    RETURNING e.id
	)
	SELECT i.event_id, i.event_id IN (SELECT id FROM outcomes) AS settled,
	       EXISTS (SELECT 1 FROM webhook_events n WHERE n.subject_id = i.subject_id AND n.sequence > i.sequence
	               AND n.state = @pending AND n.attempts = 0) AS later_waits
	FROM input i`

// outcomeOneSQL is outcomeSQL for a lone delivery, its input as scalars
// (@event_id, @attempt, …) rather than JSON: cheaper to plan and run, and
// a lone delivery is the usual case while deliveries keep up.
const outcomeOneSQL = `WITH attempts AS (
	    INSERT INTO webhook_attempts (event_id, attempt, url, started_at, status_code, latency_ms, error, next_attempt_at)
	    VALUES (@event_id, @attempt, @url, @started_at, @status_code, @latency_ms, @error, @next_attempt_at)
	), outcomes AS (
	    UPDATE webhook_events SET state = @state, next_attempt_at = @next_attempt_at, updated_at = @now,
	           delivered_at = COALESCE(CAST(@delivered_at AS timestamptz), delivered_at)
	    WHERE id = @event_id AND state = @pending
	    RETURNING id
	)
	SELECT CAST(@event_id AS uuid) AS event_id, EXISTS (SELECT 1 FROM outcomes) AS settled,
	       EXISTS (SELECT 1 FROM webhook_events n WHERE n.subject_id = @subject_id AND n.sequence > @sequence
	               AND n.state = @pending AND n.attempts = 0) AS later_waits`

// outcomeGroup records a group's outcomes in one statement. Should it
// fail, each outcome is tried alone, so that one that cannot be written
// holds no other back.
func (d *Deliverer) outcomeGroup(group []*groupcommit.Request[*outcomeRequest]) {
	switch err := d.recordOutcomes(group); {
	case err != nil && len(group) == 1:
		group[0].Item.err = err
	case err != nil:
		for i := range group {
			group[i].Item.err = d.recordOutcomes(group[i : i+1])
		}
	}
	for _, req := range group {
		req.Answer(nil)
	}
}

// recordOutcomes runs outcomeSQL for the requests (all or nothing) and
// sets what each found.
func (d *Deliverer) recordOutcomes(group []*groupcommit.Request[*outcomeRequest]) error {
	ctx, cancel := context.WithTimeout(context.Background(), groupTimeout)
	defer cancel()
	query, args := outcomeSQL, map[string]any{"now": d.now().UTC(), "pending": models.WebhookPending}
	if len(group) == 1 {
		in := group[0].Item.in
		query = outcomeOneSQL
		maps.Copy(args, map[string]any{"event_id": in.EventID, "attempt": in.Attempt, "url": in.URL,
			"started_at": in.StartedAt, "status_code": in.StatusCode, "latency_ms": in.LatencyMS, "error": in.Error,
			"next_attempt_at": in.NextAttemptAt, "state": in.State, "delivered_at": in.DeliveredAt,
			"subject_id": in.SubjectID, "sequence": in.Sequence})
	} else {
		inputs := make([]outcomeInput, len(group))
		for i, req := range group {
			inputs[i] = req.Item.in
		}
		input, err := json.Marshal(inputs)
		if err != nil {
			return err
		}
		args["input"] = string(input)
	}
	var rows []struct {
		EventID    uuid.UUID
		Settled    bool
		LaterWaits bool
	}
	if err := d.db.WithContext(ctx).Raw(query, args).Scan(&rows).Error; err != nil {
		return err
	}
	found := make(map[uuid.UUID]int, len(rows))
	for i, r := range rows {
		found[r.EventID] = i
	}
	for _, req := range group {
		if i, ok := found[req.Item.in.EventID]; ok {
			req.Item.settled, req.Item.laterWaits = rows[i].Settled, rows[i].LaterWaits
		}
	}
	return nil
}

// uuidArray is a uuid[] parameter in PostgreSQL's text form: one value, so
// that gorm does not expand it into a list, and one statement text for
// every group size.
type uuidArray []uuid.UUID

func (a uuidArray) Value() (driver.Value, error) {
	var b strings.Builder
	b.WriteByte('{')
	for i, id := range a {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(id.String())
	}
	b.WriteByte('}')
	return b.String(), nil
}
