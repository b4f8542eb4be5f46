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

	"github.com/payoutd/payoutd/credentials"
	"github.com/payoutd/payoutd/metrics"
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
	schedule Schedule
	queue    Queue
	now      func() time.Time
	metrics  *metrics.Metrics
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
	Metrics  *metrics.Metrics // counts attempts; nil counts nothing
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
	return &Deliverer{db: o.DB, sealer: o.Sealer, guard: o.Guard, client: o.Guard.HTTPClient(o.Timeout),
		schedule: o.Schedule, queue: o.Queue, now: o.Now, metrics: o.Metrics}
}

// Schedule is the retry schedule in use.
func (d *Deliverer) Schedule() Schedule { return d.schedule }

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

// waitForEarlier is how long an event waits for an earlier event of its
// subject to be delivered first.
const waitForEarlier = 2 * time.Second

// Deliver makes one delivery attempt of a pending event: the webhook:deliver
// task. It returns nil when the event is delivered (or needs no delivery),
// a *RetryLater when it should be tried again, and an error wrapping
// ErrGaveUp after the schedule's last attempt.
func (d *Deliverer) Deliver(ctx context.Context, id uuid.UUID) error {
	ev, err := d.event(ctx, id)
	if err != nil {
		return err
	}
	if ev.State != models.WebhookPending {
		return nil
	}
	if blocked, err := d.earlierPending(ctx, ev); err != nil || blocked {
		if err != nil {
			return err
		}
		return &RetryLater{Delay: waitForEarlier, Reason: "an earlier event of " + ev.SubjectID.String() + " is not delivered yet"}
	}
	client, secret, err := d.recipient(ctx, ev)
	if err != nil {
		return err
	}
	url := urlFor(client, ev.Target)
	if url == "" {
		return d.finish(ctx, ev, models.WebhookNoURL, nil)
	}
	attempt := d.send(ctx, ev, url, secret)
	return d.record(ctx, ev, attempt)
}

func (d *Deliverer) event(ctx context.Context, id uuid.UUID) (*models.WebhookEvent, error) {
	var ev models.WebhookEvent
	err := d.db.WithContext(ctx).Where("id = ?", id).Take(&ev).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, fmt.Errorf("webhook event %s: %w", id, models.ErrNotFound)
	}
	return &ev, err
}

// earlierPending reports whether an earlier event of the same subject is
// still to be delivered: events of one subject go out in order.
func (d *Deliverer) earlierPending(ctx context.Context, ev *models.WebhookEvent) (bool, error) {
	var n int64
	err := d.db.WithContext(ctx).Model(&models.WebhookEvent{}).
		Where("subject_id = ? AND sequence < ? AND state = ?", ev.SubjectID, ev.Sequence, models.WebhookPending).Count(&n).Error
	return n > 0, err
}

// recipient reads the client's current URLs and opens its Callback Secret.
func (d *Deliverer) recipient(ctx context.Context, ev *models.WebhookEvent) (*models.Client, string, error) {
	var client models.Client
	if err := d.db.WithContext(ctx).Where("id = ?", ev.ClientID).Take(&client).Error; err != nil {
		return nil, "", err
	}
	var cred models.Credential
	err := d.db.WithContext(ctx).Where("client_id = ? AND revoked_at IS NULL", ev.ClientID).Take(&cred).Error
	if err != nil {
		return nil, "", fmt.Errorf("callback secret of client %s: %w", ev.ClientID, err)
	}
	secret, err := d.sealer.Open(cred.CallbackSecretEnc)
	if err != nil {
		return nil, "", fmt.Errorf("callback secret of client %s: %w", ev.ClientID, err)
	}
	return &client, secret, nil
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
	result := attemptResult{url: url, started: started}
	if err := d.guard.CheckURL(url); err != nil {
		result.err, result.blocked = err.Error(), true
		return result
	}
	body := []byte(ev.Body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		result.err = err.Error()
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
		result.err, result.blocked = err.Error(), errors.Is(err, ErrBlockedDestination)
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

// record writes the attempt and the event's new state, and says what the
// queue should do next.
func (d *Deliverer) record(ctx context.Context, ev *models.WebhookEvent, a attemptResult) error {
	n := ev.Attempts + 1
	row := models.WebhookAttempt{EventID: ev.ID, Attempt: n, URL: a.url, StartedAt: a.started.UTC(),
		StatusCode: a.statusCode, LatencyMS: a.latency.Milliseconds()}
	if a.err != "" {
		row.Error = &a.err
	}
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
	err := d.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Create(&row).Error; err != nil {
			return err
		}
		updates := map[string]any{"attempts": n, "state": state, "next_attempt_at": row.NextAttemptAt, "updated_at": d.now().UTC()}
		if state == models.WebhookDelivered {
			updates["delivered_at"] = a.started.UTC()
		}
		return tx.Model(&models.WebhookEvent{}).Where("id = ?", ev.ID).Updates(updates).Error
	})
	if err != nil {
		return err
	}
	d.count(ev, a, state)
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

// count records a recorded attempt in the metrics.
func (d *Deliverer) count(ev *models.WebhookEvent, a attemptResult, state models.WebhookState) {
	outcome := metrics.WebhookFailed
	switch {
	case a.blocked:
		outcome = metrics.WebhookBlocked
	case state == models.WebhookDelivered:
		outcome = metrics.WebhookDelivered
	case state == models.WebhookPending:
		outcome = metrics.WebhookRetry
	}
	d.metrics.WebhookAttempt(ev.Event, outcome, a.latency)
}

func (d *Deliverer) finish(ctx context.Context, ev *models.WebhookEvent, state models.WebhookState, deliveredAt *time.Time) error {
	return d.db.WithContext(ctx).Model(&models.WebhookEvent{}).Where("id = ? AND state = ?", ev.ID, models.WebhookPending).
		Updates(map[string]any{"state": state, "next_attempt_at": nil, "delivered_at": deliveredAt, "updated_at": d.now().UTC()}).Error
}
