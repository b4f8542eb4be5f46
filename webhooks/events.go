package webhooks

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/payoutd/payoutd/internal/database"
	"github.com/payoutd/payoutd/models"
)

// Event names.
const (
	DisbursementSuccess = "disbursement.success"
	DisbursementFailed  = "disbursement.failed"
	// DisbursementReturned: a paid payout was returned by the bank; its
	// net is back in the wallet.
	DisbursementReturned = "disbursement.returned"
	PaymentSuccess       = "payment.success"
	PaymentExpired       = "payment.expired"
	PaymentFailed        = "payment.failed"
)

// NewEvent is an event about to be recorded.
type NewEvent struct {
	ClientID  uuid.UUID
	Event     string
	SubjectID uuid.UUID
	Target    models.WebhookTarget
	Data      any // the "data" object, serialised once into the body
}

// envelope is the body of every event, camelCase (docs/design.md, Webhooks).
type envelope struct {
	EventID   string `json:"eventId"`
	Event     string `json:"event"`
	CreatedAt string `json:"createdAt"`
	Data      any    `json:"data"`
}

// Record writes e inside tx, the transaction of the state change that
// causes it, and returns it. The body is built here, once: every delivery
// sends these bytes. An event of a client without a URL for its target is
// kept as no_url.
func Record(tx *gorm.DB, e NewEvent, now time.Time) (*models.WebhookEvent, error) {
	events, err := RecordAll(tx, []NewEvent{e}, now)
	if err != nil {
		return nil, err
	}
	return &events[0], nil
}

// RecordAll is Record for several events in a fixed number of statements
// (a state change applied to a batch of disbursements): events of one
// subject are numbered in the order given, after those already stored.
// On PostgreSQL it is one statement (recordAllSQL), which reads the
// clients' URLs and the subjects' last numbers itself: every round trip
// inside a move's transaction is time its rows stay locked.
func RecordAll(tx *gorm.DB, es []NewEvent, now time.Time) ([]models.WebhookEvent, error) {
	if len(es) == 0 {
		return nil, nil
	}
	// In UTC like every due time it is compared with (SQLite compares text).
	due := now.UTC()
	events := make([]models.WebhookEvent, len(es))
	for i, e := range es {
		id := models.NewID()
		body, err := json.Marshal(envelope{EventID: id.String(), Event: e.Event, CreatedAt: models.FormatTime(now), Data: e.Data})
		if err != nil {
			return nil, err
		}
		events[i] = models.WebhookEvent{ID: id, ClientID: e.ClientID, Event: e.Event, SubjectID: e.SubjectID,
			Target: e.Target, Body: string(body), State: models.WebhookPending, NextAttemptAt: &due, CreatedAt: now, UpdatedAt: now}
	}
	if database.DialectOfDB(tx) == database.Postgres {
		return events, recordInOneStatement(tx, events, now)
	}
	return events, recordInSteps(tx, events)
}

// recordInSteps numbers events after their subjects' stored ones, keeps
// those of clients without a URL for their target as no_url, and inserts
// them: a read of the clients, one of the numbers, one insert.
func recordInSteps(tx *gorm.DB, events []models.WebhookEvent) error {
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
		if urlFor(client, e.Target) == "" {
			e.State, e.NextAttemptAt = models.WebhookNoURL, nil
		}
	}
	return tx.Create(&events).Error
}

// recordAllSQL is recordInSteps as one PostgreSQL statement: $1 to $6 the
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

// recordInOneStatement is recordInSteps on PostgreSQL (recordAllSQL),
// run on tx's connection outside gorm, which would expand the arrays.
func recordInOneStatement(tx *gorm.DB, events []models.WebhookEvent, now time.Time) error {
	n := len(events)
	ids, clients, subjects := make([][16]byte, n), make([][16]byte, n), make([][16]byte, n)
	names, targets, bodies := make([]string, n), make([]string, n), make([]string, n)
	for i, e := range events {
		ids[i], clients[i], subjects[i] = e.ID, e.ClientID, e.SubjectID
		names[i], targets[i], bodies[i] = e.Event, string(e.Target), e.Body
	}
	rows, err := database.QueryDirect(tx.Statement.Context, tx, recordAllSQL, ids, clients, names, subjects, targets, bodies,
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
		// The join found no client for some: what recordInSteps says.
		for _, e := range events {
			if e.Sequence == 0 {
				return fmt.Errorf("webhook event for client %s: %w", e.ClientID, gorm.ErrRecordNotFound)
			}
		}
	}
	return nil
}

// urlFor is the display form of the client's URL for t: "" when none is set.
func urlFor(c *models.Client, t models.WebhookTarget) string {
	if t == models.TargetPayment {
		return c.PaymentWebhookURL
	}
	return c.PayoutWebhookURL
}

// disbursementData is the data of disbursement events.
type disbursementData struct {
	DisbursementID    string  `json:"disbursementId"`
	WalletID          string  `json:"walletId"`
	Status            string  `json:"status"`
	Amount            string  `json:"amount"`
	PlatformFee       string  `json:"platformFee"`
	NetAmount         string  `json:"netAmount"`
	Currency          string  `json:"currency"`
	BankCode          string  `json:"bankCode"`
	AccountNo         string  `json:"accountNo"`
	AccountHolderName string  `json:"accountHolderName"`
	ReferenceID       *string `json:"referenceId,omitempty"`
	FailedReason      *string `json:"failedReason"`
	CompletedAt       *string `json:"completedAt"`
	// ReturnedAt is only in disbursement.returned.
	ReturnedAt *string `json:"returnedAt,omitempty"`
}

// ErrNoEvent: the status causes no event.
var ErrNoEvent = errors.New("no webhook event for this status")

// DisbursementEvent is the event of a disbursement that became SUCCESS or
// FAILED; other statuses are ErrNoEvent.
func DisbursementEvent(d *models.Disbursement) (NewEvent, error) {
	var name string
	switch d.Status {
	case models.StatusSuccess:
		name = DisbursementSuccess
	case models.StatusFailed:
		name = DisbursementFailed
	case models.StatusReturned:
		name = DisbursementReturned
	default:
		return NewEvent{}, ErrNoEvent
	}
	data := disbursementData{
		DisbursementID: d.ID.String(), WalletID: d.WalletID.String(), Status: string(d.Status),
		Amount: d.Amount.String(), PlatformFee: d.PlatformFee.String(), NetAmount: d.NetAmount.String(),
		Currency: d.Currency, BankCode: d.BankCode, AccountNo: d.AccountNo, AccountHolderName: d.AccountHolderName,
		ReferenceID: d.ReferenceID, FailedReason: d.FailedReason,
	}
	if d.CompletedAt != nil {
		s := models.FormatTime(*d.CompletedAt)
		data.CompletedAt = &s
	}
	data.ReturnedAt = models.FormatTimePtr(d.ReturnedAt)
	return NewEvent{ClientID: d.ClientID, Event: name, SubjectID: d.ID, Target: models.TargetPayout, Data: data}, nil
}

// paymentData is the data of payment events.
type paymentData struct {
	PaymentID            string  `json:"paymentId"`
	PlayerID             string  `json:"playerId"`
	Status               string  `json:"status"`
	Amount               string  `json:"amount"`
	PlatformFee          string  `json:"platformFee"`
	NetAmount            string  `json:"netAmount"`
	Currency             string  `json:"currency"`
	PaidAt               *string `json:"paidAt"`
	ExpiredAt            string  `json:"expiredAt"`
	SettledAt            *string `json:"settledAt"`
	RetrievalReferenceNo *string `json:"retrievalReferenceNo"`
}

// PaymentEvent is the event of a payment's final status: payment.success,
// payment.expired or payment.failed, for the client's payment webhook URL.
func PaymentEvent(p *models.Payment) NewEvent {
	name := map[models.PaymentStatus]string{
		models.PaymentSuccess: PaymentSuccess, models.PaymentExpired: PaymentExpired, models.PaymentFailed: PaymentFailed,
	}[p.Status]
	data := paymentData{
		PaymentID: p.ID.String(), PlayerID: p.PayerID, Status: string(p.Status),
		Amount: p.Amount.String(), PlatformFee: p.PlatformFee.String(), NetAmount: p.NetAmount.String(), Currency: p.Currency,
		PaidAt: models.FormatTimePtr(p.PaidAt), ExpiredAt: models.FormatTime(p.ExpiredAt), SettledAt: models.FormatTimePtr(p.SettledAt),
		RetrievalReferenceNo: p.RetrievalReferenceNo,
	}
	return NewEvent{ClientID: p.ClientID, Event: name, SubjectID: p.ID, Target: models.TargetPayment, Data: data}
}
