package sqlitedriver

import (
	"fmt"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/payoutd/payoutd/models"
)

// RecordWebhookEvents numbers events after their subjects' stored ones,
// keeps those of clients without a URL for their target as no_url, and
// inserts them: a read of the clients, one of the numbers, one insert.
func (Driver) RecordWebhookEvents(tx *gorm.DB, events []models.WebhookEvent, _ time.Time) error {
	clientIDs := make([]uuid.UUID, 0, len(events))
	subjectIDs := make([]uuid.UUID, 0, len(events))
	for _, e := range events {
		clientIDs = append(clientIDs, e.ClientID)
		subjectIDs = append(subjectIDs, e.SubjectID)
	}
	var clients []models.Client
	if err := tx.Select("id, payout_webhook_url, payment_webhook_url").Where("id IN ?", clientIDs).Find(&clients).Error; err != nil {
		return fmt.Errorf("webhook event clients: %w", err)
	}
	clientByID := make(map[uuid.UUID]*models.Client, len(clients))
	for i := range clients {
		clientByID[clients[i].ID] = &clients[i]
	}
	var last []struct {
		SubjectID uuid.UUID
		Sequence  int
	}
	if err := tx.Model(&models.WebhookEvent{}).Select("subject_id, MAX(sequence) AS sequence").
		Where("subject_id IN ?", subjectIDs).Group("subject_id").Scan(&last).Error; err != nil {
		return err
	}
	sequence := make(map[uuid.UUID]int, len(last))
	for _, l := range last {
		sequence[l.SubjectID] = l.Sequence
	}
	for i := range events {
		e := &events[i]
		client := clientByID[e.ClientID]
		if client == nil {
			return fmt.Errorf("webhook event for client %s: %w", e.ClientID, gorm.ErrRecordNotFound)
		}
		sequence[e.SubjectID]++
		e.Sequence = sequence[e.SubjectID]
		if webhookURL(client, e.Target) == "" {
			e.State, e.NextAttemptAt = models.WebhookNoURL, nil
		}
	}
	return tx.Create(&events).Error
}

// webhookURL is the client's URL for events of target t.
func webhookURL(c *models.Client, t models.WebhookTarget) string {
	if t == models.TargetPayment {
		return c.PaymentWebhookURL
	}
	return c.PayoutWebhookURL
}
