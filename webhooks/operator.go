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
// sweep decides its task was lost (Redis down at commit, a killed worker).
const sweepGrace = time.Minute

// Sweep enqueues every pending event whose next attempt is overdue: the
// webhook:sweep task. It returns how many it enqueued.
func (d *Deliverer) Sweep(ctx context.Context) (int, error) {
	if d.queue == nil {
		return 0, nil
	}
	now := d.now().UTC()
	var due []uuid.UUID
	err := d.db.WithContext(ctx).Model(&models.WebhookEvent{}).
		Where("state = ? AND next_attempt_at <= ?", models.WebhookPending, now.Add(-sweepGrace)).
		Order("next_attempt_at").Limit(500).Pluck("id", &due).Error
	if err != nil {
		return 0, err
	}
	slot := fmt.Sprintf("sweep-%d", now.UnixMilli())
	enqueued := 0
	for _, id := range due {
		res := d.db.WithContext(ctx).Model(&models.WebhookEvent{}).
			Where("id = ? AND state = ? AND next_attempt_at <= ?", id, models.WebhookPending, now.Add(-sweepGrace)).
			Update("next_attempt_at", now.Add(sweepGrace))
		if res.Error != nil {
			return enqueued, res.Error
		}
		if res.RowsAffected != 1 {
			continue
		}
		if err := d.queue.EnqueueWebhook(ctx, id, slot); err != nil {
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

// Redeliver sends an event once more, now, whatever its state (payoutd
// admin webhook redeliver): a success marks it delivered; a failure is
// recorded and leaves its state as it was. Receivers dedupe on the event id.
func (d *Deliverer) Redeliver(ctx context.Context, id uuid.UUID) (*Redelivered, error) {
	ev, err := d.event(ctx, id)
	if err != nil {
		return nil, err
	}
	client, secret, err := d.recipient(ctx, ev)
	if err != nil {
		return nil, err
	}
	url := urlFor(client, ev.Target)
	if url == "" {
		return nil, fmt.Errorf("client %s has no %s webhook URL: set it with payoutd admin client update", ev.ClientID, ev.Target)
	}
	a := d.send(ctx, ev, url, secret)
	row := models.WebhookAttempt{EventID: ev.ID, Attempt: ev.Attempts + 1, URL: a.url, StartedAt: a.started.UTC(),
		StatusCode: a.statusCode, LatencyMS: a.latency.Milliseconds()}
	if a.err != "" {
		row.Error = &a.err
	}
	err = d.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Create(&row).Error; err != nil {
			return err
		}
		updates := map[string]any{"attempts": row.Attempt, "updated_at": d.now().UTC()}
		if a.ok() {
			updates["state"], updates["delivered_at"], updates["next_attempt_at"] = models.WebhookDelivered, a.started.UTC(), nil
		}
		return tx.Model(&models.WebhookEvent{}).Where("id = ?", ev.ID).Updates(updates).Error
	})
	if err != nil {
		return nil, err
	}
	slog.InfoContext(ctx, "webhook redelivered", slog.String("event_id", ev.ID.String()), slog.Bool("ok", a.ok()))
	ev, err = d.event(ctx, id)
	if err != nil {
		return nil, err
	}
	return &Redelivered{Event: *ev, Attempt: row}, nil
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
