package admin

import (
	"context"
	"flag"
	"fmt"

	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/webhooks"
)

// WebhookEventRecord is how operator commands show a webhook event.
type WebhookEventRecord struct {
	EventID       string                `json:"event_id"`
	Event         string                `json:"event"`
	SubjectID     string                `json:"subject_id"`
	State         string                `json:"state"`
	Attempts      int                   `json:"attempts"`
	CreatedAt     string                `json:"created_at"`
	DeliveredAt   *string               `json:"delivered_at"`
	NextAttemptAt *string               `json:"next_attempt_at"`
	LastAttempt   *WebhookAttemptRecord `json:"last_attempt"`
}

// WebhookAttemptRecord is one delivery attempt.
type WebhookAttemptRecord struct {
	Attempt       int     `json:"attempt"`
	At            string  `json:"at"`
	URL           string  `json:"url"`
	StatusCode    *int    `json:"status_code"`
	LatencyMS     int64   `json:"latency_ms"`
	Error         *string `json:"error"`
	NextAttemptAt *string `json:"next_attempt_at"`
}

// WebhookList is the answer of webhook list.
type WebhookList struct {
	ClientID string               `json:"client_id"`
	Events   []WebhookEventRecord `json:"events"`
}

func runWebhookList(ctx context.Context, d Deps, fs *flag.FlagSet, args []string) (any, error) {
	raw := fs.String("client", "", "")
	limit := fs.Int("limit", 50, "")
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	id, err := requireID("client", *raw)
	if err != nil {
		return nil, err
	}
	if *limit < 1 || *limit > 1000 {
		return nil, usageError{"--limit must be from 1 to 1000"}
	}
	if _, err := d.store().FindClient(ctx, id); err != nil {
		return nil, err
	}
	events, err := d.Webhooks.List(ctx, id, *limit)
	if err != nil {
		return nil, err
	}
	out := WebhookList{ClientID: id.String(), Events: make([]WebhookEventRecord, len(events))}
	for i, e := range events {
		out.Events[i] = toWebhookEventRecord(e.WebhookEvent, e.LastAttempt)
	}
	return out, nil
}

func runWebhookRedeliver(ctx context.Context, d Deps, fs *flag.FlagSet, args []string) (any, error) {
	raw := fs.String("event", "", "")
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	id, err := requireID("event", *raw)
	if err != nil {
		return nil, err
	}
	done, err := d.Webhooks.Redeliver(ctx, id)
	if err != nil {
		return nil, err
	}
	out := redeliveryRecord{WebhookEventRecord: toWebhookEventRecord(done.Event, &done.Attempt)}
	if !done.OK() {
		reason := "no answer"
		if out.LastAttempt.Error != nil {
			reason = *out.LastAttempt.Error
		}
		out.failure = fmt.Sprintf("redelivery of event %s failed (attempt %d): %s", id, done.Attempt.Attempt, reason)
	}
	return out, nil
}

// redeliveryRecord is what redeliver prints. A redelivery that got no 2xx
// is printed all the same, then fails the command (failedResult), so a
// script cannot take it for delivered.
type redeliveryRecord struct {
	WebhookEventRecord
	failure string
}

func (r redeliveryRecord) commandFailure() string { return r.failure }

func toWebhookEventRecord(e models.WebhookEvent, last *models.WebhookAttempt) WebhookEventRecord {
	r := WebhookEventRecord{EventID: e.ID.String(), Event: e.Event, SubjectID: e.SubjectID.String(), State: string(e.State),
		Attempts: e.Attempts, CreatedAt: models.FormatTime(e.CreatedAt), DeliveredAt: models.FormatTimePtr(e.DeliveredAt), NextAttemptAt: models.FormatTimePtr(e.NextAttemptAt)}
	if last != nil {
		// Attempts recorded before URLs were redacted at the source may
		// still carry a merchant's credentials.
		r.LastAttempt = &WebhookAttemptRecord{Attempt: last.Attempt, At: models.FormatTime(last.StartedAt), URL: webhooks.Redact(last.URL),
			StatusCode: last.StatusCode, LatencyMS: last.LatencyMS, NextAttemptAt: models.FormatTimePtr(last.NextAttemptAt)}
		if last.Error != nil {
			msg := webhooks.Redact(*last.Error)
			r.LastAttempt.Error = &msg
		}
	}
	return r
}
