package webhooks

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/payoutd/payoutd/models"
)

// sweepGrace is how long past its next attempt an event waits before the
// sweep decides its task was lost (Redis down at commit, a killed worker)
// or is stuck behind others.
const sweepGrace = time.Minute

// Sweep enqueues every pending event whose next attempt is overdue: the
// webhook:sweep task. It returns how many it enqueued (or found queued).
// A copy of a task that is only late does no harm: whichever runs first
// claims the attempt and the other ends without sending.
func (d *Deliverer) Sweep(ctx context.Context) (int, error) {
	if d.queue == nil {
		return 0, nil
	}
	now := d.now().UTC()
	var due []models.WebhookEvent
	err := d.db.WithContext(ctx).Select("id", "attempts", "next_attempt_at").
		Where("state = ? AND next_attempt_at <= ?", models.WebhookPending, now.Add(-sweepGrace)).
		Order("next_attempt_at").Limit(500).Find(&due).Error
	if err != nil {
		return 0, err
	}
	enqueued := 0
	for _, ev := range due {
		// One copy per overdue attempt: the slot names the attempt and its
		// due time, so later sweeps find the task id taken instead of
		// queueing more copies of a task that is only waiting its turn.
		slot := fmt.Sprintf("sweep-%d-%d", ev.Attempts, ev.NextAttemptAt.UnixMilli())
		if err := d.queue.EnqueueWebhook(ctx, ev.ID, slot); err != nil {
			return enqueued, err
		}
		enqueued++
	}
	return enqueued, nil
}

// Redelivered is the outcome of an operator's redelivery.
type Redelivered struct {
	Event   models.WebhookEvent
	Attempt models.WebhookAttempt
}

// OK reports whether the receiver answered the redelivery with a 2xx.
func (r *Redelivered) OK() bool {
	return r.Attempt.StatusCode != nil && *r.Attempt.StatusCode >= 200 && *r.Attempt.StatusCode < 300
}

// Redeliver sends an event once more, now, whatever its state (payoutd
// admin webhook redeliver): a success marks it delivered; a failure is
// recorded and leaves its state as it was. Receivers dedupe on the event id.
func (d *Deliverer) Redeliver(ctx context.Context, id uuid.UUID) (*Redelivered, error) {
	ev, err := d.event(ctx, id)
	if err != nil {
		return nil, err
	}
	url, secret, err := d.recipient(ctx, ev)
	if err != nil {
		return nil, err
	}
	if url == "" {
		return nil, fmt.Errorf("client %s has no %s webhook URL: set it with payoutd admin client update", ev.ClientID, ev.Target)
	}
	n, err := d.countAttempt(ctx, ev)
	if err != nil {
		return nil, err
	}
	a := d.send(ctx, ev, url, secret)
	row := attemptRow(ev, n, a)
	err = d.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Create(&row).Error; err != nil {
			return err
		}
		if !a.ok() {
			return nil
		}
		return tx.Model(&models.WebhookEvent{}).Where("id = ?", ev.ID).Updates(map[string]any{"state": models.WebhookDelivered,
			"delivered_at": a.started.UTC(), "next_attempt_at": nil, "updated_at": d.now().UTC()}).Error
	})
	if err != nil {
		return nil, err
	}
	if a.ok() {
		d.wakeNext(ctx, ev)
	}
	slog.InfoContext(ctx, "webhook redelivered", slog.String("event_id", ev.ID.String()), slog.Bool("ok", a.ok()))
	ev, err = d.event(ctx, id)
	if err != nil {
		return nil, err
	}
	return &Redelivered{Event: *ev, Attempt: row}, nil
}

// countAttempt numbers an operator's redelivery: the event's next attempt
// number, taken with a conditional update so that it never collides with a
// scheduled delivery's. A redelivery neither waits for the event to be due
// nor leases it: it is sent now, whatever the state.
func (d *Deliverer) countAttempt(ctx context.Context, ev *models.WebhookEvent) (int, error) {
	for range 5 {
		res := d.db.WithContext(ctx).Model(&models.WebhookEvent{}).Where("id = ? AND attempts = ?", ev.ID, ev.Attempts).
			Updates(map[string]any{"attempts": ev.Attempts + 1, "updated_at": d.now().UTC()})
		if res.Error != nil {
			return 0, res.Error
		}
		if res.RowsAffected == 1 {
			return ev.Attempts + 1, nil
		}
		fresh, err := d.event(ctx, ev.ID)
		if err != nil {
			return 0, err
		}
		ev = fresh
	}
	return 0, fmt.Errorf("webhook event %s is being delivered right now; try again", ev.ID)
}

// EventWithLastAttempt is an event as operators list it.
type EventWithLastAttempt struct {
	models.WebhookEvent
	LastAttempt *models.WebhookAttempt
}

// List returns a client's most recent events, newest first, each with its
// last attempt.
func (d *Deliverer) List(ctx context.Context, clientID uuid.UUID, limit int) ([]EventWithLastAttempt, error) {
	var events []models.WebhookEvent
	err := d.db.WithContext(ctx).Where("client_id = ?", clientID).Order("created_at DESC, sequence DESC").Limit(limit).Find(&events).Error
	if err != nil {
		return nil, err
	}
	out := make([]EventWithLastAttempt, len(events))
	for i, ev := range events {
		out[i].WebhookEvent = ev
		var last models.WebhookAttempt
		err := d.db.WithContext(ctx).Where("event_id = ?", ev.ID).Order("id DESC").Limit(1).Find(&last).Error
		if err != nil {
			return nil, err
		}
		if last.ID != 0 {
			out[i].LastAttempt = &last
		}
	}
	return out, nil
}

// Attempts returns every attempt of an event, oldest first.
func (d *Deliverer) Attempts(ctx context.Context, id uuid.UUID) ([]models.WebhookAttempt, error) {
	var out []models.WebhookAttempt
	err := d.db.WithContext(ctx).Where("event_id = ?", id).Order("id").Find(&out).Error
	return out, err
}
