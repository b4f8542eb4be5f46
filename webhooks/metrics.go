package webhooks

import "time"

// Outcomes of a recorded delivery attempt, as Metrics.WebhookAttempt gets
// them. They are the outcome label values of payoutd_webhook_attempts_total,
// which operators alert on: do not rename them.
const (
	OutcomeDelivered = "delivered"
	OutcomeRetry     = "retry"
	OutcomeFailed    = "failed"  // the last attempt failed: no retry follows
	OutcomeBlocked   = "blocked" // refused by the SSRF guard; nothing was sent
)

// Metrics counts delivery attempts. The deliverer declares what it needs;
// internal/metrics implements it over Prometheus, so this package imports
// no metrics library.
type Metrics interface {
	// WebhookAttempt records a recorded attempt of event with its outcome
	// (an Outcome* constant) and how long it took; the time of a blocked
	// attempt means nothing.
	WebhookAttempt(event, outcome string, took time.Duration)
	// GroupRun records one group of deliveries that shared a statement
	// (webhook_claims, webhook_outcomes): its size and how long it took.
	GroupRun(group string, size int, took time.Duration)
}

// noMetrics counts nothing: New puts it in place of a nil Options.Metrics,
// so callers never check.
type noMetrics struct{}

func (noMetrics) WebhookAttempt(event, outcome string, took time.Duration) {}
func (noMetrics) GroupRun(group string, size int, took time.Duration)      {}
