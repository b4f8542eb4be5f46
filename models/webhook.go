package models

import (
	"time"

	"github.com/google/uuid"
)

// WebhookState is where a webhook event is in its delivery.
type WebhookState string

const (
	// WebhookPending: to be delivered (again) at NextAttemptAt.
	WebhookPending WebhookState = "pending"
	// WebhookDelivered: a 2xx answer was received.
	WebhookDelivered WebhookState = "delivered"
	// WebhookFailed: every attempt of the retry schedule failed; the task
	// is archived in the queue and an operator may redeliver it.
	WebhookFailed WebhookState = "failed"
	// WebhookNoURL: the client had no webhook URL; the event is kept.
	WebhookNoURL WebhookState = "no_url"
)

// WebhookTarget says which of a client's URLs an event goes to.
type WebhookTarget string

const (
	TargetPayout  WebhookTarget = "payout"
	TargetPayment WebhookTarget = "payment"
)

// WebhookEvent is an event for a merchant's backend, with the exact body
// it carries (frozen when the state change that caused it committed).
type WebhookEvent struct {
	ID            uuid.UUID     `gorm:"type:uuid;primaryKey"`
	ClientID      uuid.UUID     `gorm:"type:uuid;not null"`
	Event         string        `gorm:"not null"`
	SubjectID     uuid.UUID     `gorm:"type:uuid;not null"`
	Sequence      int           `gorm:"not null"`
	Target        WebhookTarget `gorm:"not null"`
	Body          string        `gorm:"not null"`
	State         WebhookState  `gorm:"not null"`
	Attempts      int           `gorm:"not null"`
	NextAttemptAt *time.Time
	DeliveredAt   *time.Time
	CreatedAt     time.Time
	UpdatedAt     time.Time
}

// WebhookAttempt is one try at delivering an event.
type WebhookAttempt struct {
	ID            int64     `gorm:"primaryKey;autoIncrement"`
	EventID       uuid.UUID `gorm:"type:uuid;not null"`
	Attempt       int       `gorm:"not null"`
	URL           string    `gorm:"column:url;not null"`
	StartedAt     time.Time
	StatusCode    *int
	LatencyMS     int64 `gorm:"column:latency_ms;not null"`
	Error         *string
	NextAttemptAt *time.Time
}
