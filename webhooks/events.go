package webhooks

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

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
// On PostgreSQL it is one statement, which reads the clients' URLs and
// the subjects' last numbers itself: every round trip inside a move's
// transaction is time its rows stay locked (the driver's
// RecordWebhookEvents).
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
	return events, models.DriverOf(tx).RecordWebhookEvents(tx, events, now)
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
