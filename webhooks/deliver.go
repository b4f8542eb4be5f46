package webhooks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/payoutd/payoutd/internal/credentials"
	"github.com/payoutd/payoutd/internal/groupcommit"
	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/signature"
)

// Headers of a delivery.
const (
	SignatureHeader = "x-callback-signature"
	EventIDHeader   = "x-event-id"
)

// DefaultTimeout bounds one delivery attempt.
const DefaultTimeout = 10 * time.Second

// Queue enqueues deliveries; tasks.Client implements it. slot tells a
// redelivery or a sweep from a duplicate.
type Queue interface {
	EnqueueWebhook(ctx context.Context, eventID uuid.UUID, slot string) error
}

// Deliverer sends events to merchant backends.
type Deliverer struct {
	db       *gorm.DB
	sealer   *credentials.Sealer
	guard    Guard
	client   *http.Client
	timeout  time.Duration
	schedule Schedule
	queue    Queue
	now      func() time.Time
	metrics  Metrics // never nil

	// On PostgreSQL the claims and outcomes of deliveries that run at the
	// same moment share one statement each (groups.go).
	grouped  bool
	claims   groupcommit.Group[*claimRequest]
	outcomes groupcommit.Group[*outcomeRequest]
}

// Options configure a Deliverer.
type Options struct {
	DB       *gorm.DB
	Sealer   *credentials.Sealer // opens the clients' Callback Secrets
	Guard    Guard
	Timeout  time.Duration // per attempt; default 10 s
	Schedule Schedule      // default DefaultSchedule
	Queue    Queue         // for Sweep and Redeliver; may be nil
	Now      func() time.Time
	Metrics  Metrics // counts attempts; nil counts nothing
	// HTTPClient sends the deliveries; nil: the guard's (Guard.HTTPClient
	// with Timeout), which checks every address it dials. Only a program
	// that stands in for the merchants (the simulation) sets it.
	HTTPClient *http.Client
}

// New returns a Deliverer.
func New(o Options) *Deliverer {
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Schedule == (Schedule{}) {
		o.Schedule = DefaultSchedule
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Metrics == nil {
		o.Metrics = noMetrics{}
	}
	if o.HTTPClient == nil {
		o.HTTPClient = o.Guard.HTTPClient(o.Timeout)
	}
	d := &Deliverer{db: o.DB, sealer: o.Sealer, guard: o.Guard, client: o.HTTPClient, timeout: o.Timeout,
		schedule: o.Schedule, queue: o.Queue, now: o.Now, metrics: o.Metrics}
	if o.DB != nil && o.DB.Dialector.Name() == "postgres" {
		d.startGroups()
	}
	return d
}

// Schedule is the retry schedule in use.
func (d *Deliverer) Schedule() Schedule { return d.schedule }

// Timeout is the limit of one attempt.
func (d *Deliverer) Timeout() time.Duration { return d.timeout }

// RetryLater asks the queue to run the task again after Delay.
type RetryLater struct {
	Delay  time.Duration
	Reason string
}

// RetryDelay is the wait the queue applies before the next attempt.
func (r *RetryLater) RetryDelay() time.Duration { return r.Delay }

func (r *RetryLater) Error() string {
	return fmt.Sprintf("%s; next attempt in %s", r.Reason, r.Delay.Round(time.Millisecond))
}

// ErrGaveUp: the last attempt of the schedule failed; the task should be
// archived, not retried.
var ErrGaveUp = errors.New("webhook delivery failed on every attempt of the schedule")

// waitForEarlier is how long after the earlier events of its subject are
// due a held event looks again (holdBehindEarlier), should nothing wake it.
const waitForEarlier = 2 * time.Second

// earlyTolerance is how early a task may run and still make the attempt:
// asynq keeps retry times to the second, so a retry may start up to a
// second before the next_attempt_at it was scheduled for, and waits. A
// task further ahead is not the one the event waits for (say the sweep's
// copy of a late task, after that task made the attempt): it ends without
// sending.
const earlyTolerance = 2 * time.Second

// claimLease is how long past the attempt's timeout a claimed attempt keeps
// the event to itself (as its next_attempt_at): only a crash while sending
// outlives it, and then the sweep takes the event over.
const claimLease = 30 * time.Second

// Deliver makes one delivery attempt of a pending event: the webhook:deliver
// task. It returns nil when the event is delivered (or needs no delivery,
// or another delivery owns its next attempt), a *RetryLater when it should
// be tried again, and an error wrapping ErrGaveUp after the schedule's last
// attempt. The attempt is claimed on the event row before anything is
// sent, so two deliveries of one event never both send, and none sends
// before the event is due.
func (d *Deliverer) Deliver(ctx context.Context, id uuid.UUID) error {
	if claimed, err := d.claimReady(ctx, id); err != nil || claimed != nil {
		if err != nil {
			return err
		}
		return d.deliverClaimed(ctx, claimed)
	}
	ev, earlierPending, err := d.eventToDeliver(ctx, id)
	if err != nil {
		return err
	}
	if ev.State != models.WebhookPending {
		return nil
	}
	if wait := d.untilDue(ev); wait > earlyTolerance {
		return nil
	} else if wait > 0 {
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return ctx.Err()
		}
		earlierPending = true // looked at before the wait: look again
	}
	if earlierPending {
		if blocked, later, err := d.holdBehindEarlier(ctx, ev); err != nil {
			return err
		} else if blocked {
			if later == nil {
				return nil
			}
			return later
		}
	}
	url, secret, err := d.recipient(ctx, ev)
	if err != nil {
		return err
	}
	if url == "" {
		if err := d.finish(ctx, ev, models.WebhookNoURL, nil); err != nil {
			return err
		}
		d.wakeNext(ctx, ev)
		return nil
	}
	n, claimed, err := d.claim(ctx, ev)
	if err != nil || !claimed {
		return err
	}
	return d.record(ctx, ev, n, d.send(ctx, ev, url, secret))
}

// readyClaim is an event claimed by claimReady, with what its recipient
// query would have read.
type readyClaim struct {
	ev      *models.WebhookEvent // as before the claim
	attempt int
	row     recipientRow
}

// deliverClaimed sends an event claimReady claimed and records the outcome.
// A recipient that cannot be opened (a sealing key dropped, a plain URL)
// gives the attempt back, due at once, and fails the task as the long way
// does before it claims.
func (d *Deliverer) deliverClaimed(ctx context.Context, c *readyClaim) error {
	url, secret, err := d.openRecipient(c.ev, c.row)
	if err != nil {
		now := d.now().UTC()
		undo := d.db.WithContext(ctx).Model(&models.WebhookEvent{}).
			Where("id = ? AND state = ? AND attempts = ?", c.ev.ID, models.WebhookPending, c.attempt).
			Updates(map[string]any{"attempts": c.ev.Attempts, "next_attempt_at": now, "updated_at": now}).Error
		return errors.Join(err, undo)
	}
	return d.record(ctx, c.ev, c.attempt, d.send(ctx, c.ev, url, secret))
}

// untilDue is how long until the event's next attempt is due.
func (d *Deliverer) untilDue(ev *models.WebhookEvent) time.Duration {
	if ev.NextAttemptAt == nil {
		return 0
	}
	return ev.NextAttemptAt.Sub(d.now())
}

// claim takes the event's next attempt for this delivery with one
// conditional update: of two deliveries of one event (a task that ran late
// and the sweep's copy of it) only one gets it, and none before the event
// is due. The attempt is counted at once and the event leased until its
// outcome is recorded. It returns the attempt's number, or false when the
// event is not this delivery's to send (any more).
func (d *Deliverer) claim(ctx context.Context, ev *models.WebhookEvent) (int, bool, error) {
	for range 3 {
		now := d.now().UTC()
		res := d.db.WithContext(ctx).Model(&models.WebhookEvent{}).
			Where("id = ? AND state = ? AND attempts = ? AND (next_attempt_at IS NULL OR next_attempt_at <= ?)",
				ev.ID, models.WebhookPending, ev.Attempts, now).
			Updates(map[string]any{"attempts": ev.Attempts + 1, "next_attempt_at": now.Add(d.timeout + claimLease), "updated_at": now})
		if res.Error != nil {
			return 0, false, res.Error
		}
		if res.RowsAffected == 1 {
			return ev.Attempts + 1, true, nil
		}
		// An operator's redelivery counts an attempt without taking the
		// event: still due, it is still ours. Anything else owns it now.
		fresh, err := d.event(ctx, ev.ID)
		if err != nil {
			return 0, false, err
		}
		if fresh.State != models.WebhookPending || d.untilDue(fresh) > 0 {
			return 0, false, nil
		}
		ev = fresh
	}
	return 0, false, nil
}

// eventToDeliver reads the event and, in the same query, whether an
// earlier event of its subject is still pending (then holdBehindEarlier
// decides): most events have none, and their delivery is spared a round
// trip.
func (d *Deliverer) eventToDeliver(ctx context.Context, id uuid.UUID) (*models.WebhookEvent, bool, error) {
	var rows []struct {
		models.WebhookEvent `gorm:"embedded"`
		EarlierPending      int64
	}
	err := d.db.WithContext(ctx).Raw(`SELECT e.*,
		       (SELECT count(*) FROM webhook_events p
		        WHERE p.subject_id = e.subject_id AND p.sequence < e.sequence AND p.state = ?) AS earlier_pending
		FROM webhook_events e WHERE e.id = ?`, models.WebhookPending, id).Scan(&rows).Error
	if err != nil {
		return nil, false, err
	}
	if len(rows) == 0 {
		return nil, false, fmt.Errorf("webhook event %s: %w", id, models.ErrNotFound)
	}
	return &rows[0].WebhookEvent, rows[0].EarlierPending > 0, nil
}

func (d *Deliverer) event(ctx context.Context, id uuid.UUID) (*models.WebhookEvent, error) {
	var ev models.WebhookEvent
	err := d.db.WithContext(ctx).Where("id = ?", id).Take(&ev).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, fmt.Errorf("webhook event %s: %w", id, models.ErrNotFound)
	}
	return &ev, err
}

// holdBehindEarlier keeps ev waiting while an earlier event of its subject
// is pending (events of one subject go out in order) without spending its
// attempts: its next_attempt_at moves just past the latest of theirs, so
// the sweep leaves it alone, and the earlier event's outcome wakes it
// sooner (wakeNext). It reports whether ev is blocked, and the retry its
// task should ask for (nil when ev changed meanwhile: not this task's).
func (d *Deliverer) holdBehindEarlier(ctx context.Context, ev *models.WebhookEvent) (bool, *RetryLater, error) {
	var earlier []models.WebhookEvent
	err := d.db.WithContext(ctx).Select("id", "next_attempt_at").
		Where("subject_id = ? AND sequence < ? AND state = ?", ev.SubjectID, ev.Sequence, models.WebhookPending).Find(&earlier).Error
	if err != nil || len(earlier) == 0 {
		return false, nil, err
	}
	now := d.now().UTC()
	until := now
	for _, e := range earlier {
		if e.NextAttemptAt != nil && e.NextAttemptAt.After(until) {
			until = *e.NextAttemptAt
		}
	}
	until = until.UTC().Add(waitForEarlier)
	res := d.db.WithContext(ctx).Model(&models.WebhookEvent{}).
		Where("id = ? AND state = ? AND attempts = ?", ev.ID, models.WebhookPending, ev.Attempts).
		Updates(map[string]any{"next_attempt_at": until, "updated_at": now})
	if res.Error != nil || res.RowsAffected != 1 {
		return true, nil, res.Error
	}
	return true, &RetryLater{Delay: until.Sub(now), Reason: "an earlier event of " + ev.SubjectID.String() + " is not delivered yet"}, nil
}

// wakeNext hands ordered delivery on once ev is no longer pending: the next
// event of its subject held behind it becomes due now and is queued at
// once, not when its hold runs out. A failure here only delays that event
// until then, so it is logged, not returned.
func (d *Deliverer) wakeNext(ctx context.Context, ev *models.WebhookEvent) {
	var next models.WebhookEvent
	err := d.db.WithContext(ctx).Select("id").
		Where("subject_id = ? AND sequence > ? AND state = ? AND attempts = 0", ev.SubjectID, ev.Sequence, models.WebhookPending).
		Order("sequence").Limit(1).Find(&next).Error
	if err == nil && next.ID != uuid.Nil {
		now := d.now().UTC()
		res := d.db.WithContext(ctx).Model(&models.WebhookEvent{}).
			Where("id = ? AND state = ? AND attempts = 0 AND next_attempt_at > ?", next.ID, models.WebhookPending, now).
			Updates(map[string]any{"next_attempt_at": now, "updated_at": now})
		err = res.Error
		if err == nil && res.RowsAffected == 1 && d.queue != nil {
			err = d.queue.EnqueueWebhook(ctx, next.ID, "after-"+ev.ID.String())
		}
	}
	if err != nil {
		slog.WarnContext(ctx, "webhook: waking the next event of the subject failed; it waits out its hold",
			slog.String("event_id", ev.ID.String()), slog.Any("error", err))
	}
}

// recipient opens the client's current URL for the event's target ("" when
// none is set) and its Callback Secret.
//
// The client's URLs and its live credential come in one query (a join):
// a delivery's reads are most of its round trips.
func (d *Deliverer) recipient(ctx context.Context, ev *models.WebhookEvent) (string, string, error) {
	var rows []recipientRow
	err := d.db.WithContext(ctx).Raw(`SELECT c.payout_webhook_url, c.payment_webhook_url,
		       c.payout_webhook_url_enc, c.payment_webhook_url_enc,
		       cr.id AS credential_id, cr.callback_secret_enc
		FROM clients c LEFT JOIN credentials cr ON cr.client_id = c.id AND cr.revoked_at IS NULL
		WHERE c.id = ? LIMIT 1`, ev.ClientID).Scan(&rows).Error
	switch {
	case err != nil:
		return "", "", err
	case len(rows) == 0:
		return "", "", fmt.Errorf("client %s of webhook event %s: %w", ev.ClientID, ev.ID, gorm.ErrRecordNotFound)
	}
	return d.openRecipient(ev, rows[0])
}

// recipientRow is a client's webhook URLs and its live credential, as read.
type recipientRow struct {
	PayoutWebhookURL     string
	PaymentWebhookURL    string
	PayoutWebhookURLEnc  string
	PaymentWebhookURLEnc string
	CredentialID         *uuid.UUID
	CallbackSecretEnc    *string
}

// openRecipient opens the URL for ev's target ("" when none is set) and the
// Callback Secret from r.
func (d *Deliverer) openRecipient(ev *models.WebhookEvent, r recipientRow) (string, string, error) {
	if r.CredentialID == nil || r.CallbackSecretEnc == nil {
		return "", "", fmt.Errorf("callback secret of client %s: %w", ev.ClientID, gorm.ErrRecordNotFound)
	}
	client := models.Client{ID: ev.ClientID, PayoutWebhookURL: r.PayoutWebhookURL, PaymentWebhookURL: r.PaymentWebhookURL,
		PayoutWebhookURLEnc: r.PayoutWebhookURLEnc, PaymentWebhookURLEnc: r.PaymentWebhookURLEnc}
	cred := models.Credential{ID: *r.CredentialID, CallbackSecretEnc: *r.CallbackSecretEnc}
	secret, err := d.sealer.Open(cred.CallbackSecretEnc, credentials.CredentialBinding(ev.ClientID, cred.ID, credentials.FieldCallbackSecret))
	if err != nil {
		return "", "", fmt.Errorf("callback secret of client %s: %w", ev.ClientID, err)
	}
	url, err := OpenURL(d.sealer, &client, ev.Target, credentials.IsLegacy(cred.CallbackSecretEnc))
	if err != nil {
		return "", "", err
	}
	return url, secret, nil
}

// ErrPlainURL: a client's webhook URL is in plain text although its
// credentials are of the current version. Only rows of earlier versions
// hold plain URLs: anything else was written behind the service's back and
// is not followed.
var ErrPlainURL = errors.New("webhook URL is stored in plain text, not sealed: refusing to follow it; set it again with payoutd admin client update")

// OpenURL returns the client's webhook URL for target, opened from its
// sealed column; "" when none is set. legacyClient says the client's
// credentials are of an earlier version (sealed without key id): only then
// is a plain-text URL followed, as earlier versions stored it. Once
// `payoutd admin secrets rotate-key` has run and the previous key is
// dropped, no such credential opens, so no plain URL is ever followed again.
func OpenURL(sealer *credentials.Sealer, c *models.Client, target models.WebhookTarget, legacyClient bool) (string, error) {
	sealed, shown, field := c.PayoutWebhookURLEnc, c.PayoutWebhookURL, credentials.FieldPayoutWebhookURL
	if target == models.TargetPayment {
		sealed, shown, field = c.PaymentWebhookURLEnc, c.PaymentWebhookURL, credentials.FieldPaymentWebhookURL
	}
	switch {
	case sealed != "":
		url, err := sealer.Open(sealed, credentials.ClientBinding(c.ID, field))
		if err != nil {
			return "", fmt.Errorf("%s of client %s: %w", field, c.ID, err)
		}
		return url, nil
	case shown == "":
		return "", nil
	case legacyClient:
		return shown, nil
	}
	return "", fmt.Errorf("%s of client %s: %w", field, c.ID, ErrPlainURL)
}

// attemptResult is what one POST gave.
type attemptResult struct {
	url        string
	started    time.Time
	statusCode *int
	latency    time.Duration
	err        string
	blocked    bool // refused by the guard
}

func (a attemptResult) ok() bool {
	return a.statusCode != nil && *a.statusCode >= 200 && *a.statusCode < 300
}

// send POSTs the event's body, signed afresh.
func (d *Deliverer) send(ctx context.Context, ev *models.WebhookEvent, url, secret string) attemptResult {
	started := d.now()
	// Only the text kept of the attempt is reduced to the display form: the
	// request itself goes to the URL as the merchant set it (credentials
	// as basic auth, path and query).
	result := attemptResult{url: DisplayURL(url), started: started}
	if err := d.guard.CheckURL(url); err != nil {
		result.err, result.blocked = scrub(err.Error()), true
		return result
	}
	body := []byte(ev.Body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		result.err = scrub(err.Error())
		return result
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "payoutd-webhooks/1")
	req.Header.Set(SignatureHeader, signature.Sign(secret, body, started))
	req.Header.Set(EventIDHeader, ev.ID.String())
	clock := time.Now()
	resp, err := d.client.Do(req)
	result.latency = time.Since(clock)
	if err != nil {
		result.err, result.blocked = scrub(err.Error()), errors.Is(err, ErrBlockedDestination)
		return result
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	code := resp.StatusCode
	result.statusCode = &code
	if !result.ok() {
		result.err = "answered " + resp.Status
	}
	return result
}

// attemptRow is attempt n as recorded.
func attemptRow(ev *models.WebhookEvent, n int, a attemptResult) models.WebhookAttempt {
	row := models.WebhookAttempt{EventID: ev.ID, Attempt: n, URL: a.url, StartedAt: a.started.UTC(),
		StatusCode: a.statusCode, LatencyMS: a.latency.Milliseconds()}
	if a.err != "" {
		row.Error = &a.err
	}
	return row
}

// record writes claimed attempt n and the event's new state, and says what
// the queue should do next.
func (d *Deliverer) record(ctx context.Context, ev *models.WebhookEvent, n int, a attemptResult) error {
	row := attemptRow(ev, n, a)
	state := models.WebhookDelivered
	var wait time.Duration
	if !a.ok() {
		var more bool
		wait, more = d.schedule.After(ev.ID, n)
		state = models.WebhookFailed
		if more {
			state = models.WebhookPending
			next := a.started.Add(wait).UTC()
			row.NextAttemptAt = &next
		}
	}
	var deliveredAt *time.Time
	if state == models.WebhookDelivered {
		at := a.started.UTC()
		deliveredAt = &at
	}
	settled, laterWaits, err := d.writeOutcome(ctx, ev, row, state, deliveredAt)
	if err != nil {
		return err
	}
	d.count(ev, a, state)
	if !settled {
		return nil
	}
	if state != models.WebhookPending && laterWaits {
		d.wakeNext(ctx, ev)
	}
	switch state {
	case models.WebhookDelivered:
		return nil
	case models.WebhookPending:
		return &RetryLater{Delay: wait, Reason: fmt.Sprintf("attempt %d: %s", n, a.err)}
	default:
		slog.ErrorContext(ctx, "webhook delivery gave up", slog.String("event_id", ev.ID.String()),
			slog.String("client_id", ev.ClientID.String()), slog.Int("attempts", n))
		return fmt.Errorf("%w (attempt %d: %s)", ErrGaveUp, n, a.err)
	}
}

// writeOutcome stores the attempt row and the event's new state together.
// The event changes only while still pending: an operator's redelivery
// may have delivered it while this attempt was out, and then that outcome
// stands (settled is false). On PostgreSQL it is one statement shared with
// the outcomes recorded at the same moment (writeOutcomeGrouped), which
// also says whether a later event of the subject waits (laterWaits), so
// that wakeNext's query runs only then. On SQLite it is a transaction of
// its own and laterWaits is always true.
func (d *Deliverer) writeOutcome(ctx context.Context, ev *models.WebhookEvent, row models.WebhookAttempt,
	state models.WebhookState, deliveredAt *time.Time) (settled, laterWaits bool, err error) {
	if d.grouped {
		return d.writeOutcomeGrouped(ev, row, state, deliveredAt)
	}
	now := d.now().UTC()
	err = d.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Create(&row).Error; err != nil {
			return err
		}
		updates := map[string]any{"state": state, "next_attempt_at": row.NextAttemptAt, "updated_at": now}
		if deliveredAt != nil {
			updates["delivered_at"] = *deliveredAt
		}
		res := tx.Model(&models.WebhookEvent{}).Where("id = ? AND state = ?", ev.ID, models.WebhookPending).Updates(updates)
		settled = res.RowsAffected == 1
		return res.Error
	})
	return settled, true, err
}

// count records a recorded attempt in the metrics.
func (d *Deliverer) count(ev *models.WebhookEvent, a attemptResult, state models.WebhookState) {
	outcome := OutcomeFailed
	switch {
	case a.blocked:
		outcome = OutcomeBlocked
	case state == models.WebhookDelivered:
		outcome = OutcomeDelivered
	case state == models.WebhookPending:
		outcome = OutcomeRetry
	}
	d.metrics.WebhookAttempt(ev.Event, outcome, a.latency)
}

func (d *Deliverer) finish(ctx context.Context, ev *models.WebhookEvent, state models.WebhookState, deliveredAt *time.Time) error {
	return d.db.WithContext(ctx).Model(&models.WebhookEvent{}).Where("id = ? AND state = ?", ev.ID, models.WebhookPending).
		Updates(map[string]any{"state": state, "next_attempt_at": nil, "delivered_at": deliveredAt, "updated_at": d.now().UTC()}).Error
}
