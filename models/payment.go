package models

import (
	"time"

	"github.com/google/uuid"
)

// PaymentStatus is where a payment is (docs/design.md, Payment lifecycle).
type PaymentStatus string

const (
	// PaymentPending: the QR is shown, waiting for the payer.
	PaymentPending PaymentStatus = "PENDING"
	// PaymentSuccess: the acquirer reports it paid; settled into the
	// client's wallet on the next business day.
	PaymentSuccess PaymentStatus = "SUCCESS"
	// PaymentExpired: nobody paid before expired_at.
	PaymentExpired PaymentStatus = "EXPIRED"
	// PaymentFailed: the acquirer reports the payment failed.
	PaymentFailed PaymentStatus = "FAILED"
)

// PaymentStatuses lists every status.
var PaymentStatuses = []PaymentStatus{PaymentPending, PaymentSuccess, PaymentExpired, PaymentFailed}

// paymentMoves is the whole table of allowed payment moves.
var paymentMoves = map[PaymentStatus][]PaymentStatus{
	PaymentPending: {PaymentSuccess, PaymentExpired, PaymentFailed},
}

// CanMoveTo reports whether the payment lifecycle allows from → to.
func (from PaymentStatus) CanMoveTo(to PaymentStatus) bool {
	for _, allowed := range paymentMoves[from] {
		if allowed == to {
			return true
		}
	}
	return false
}

// PaymentFlowEmbed is the only checkout flow.
const PaymentFlowEmbed = "embed"

// Payment is money a payer sends a client through a QRIS checkout.
type Payment struct {
	ID          uuid.UUID     `gorm:"type:uuid;primaryKey"`
	ClientID    uuid.UUID     `gorm:"type:uuid;not null"`
	WalletID    uuid.UUID     `gorm:"type:uuid;not null"`
	PayerID     string        `gorm:"not null"`
	Flow        string        `gorm:"not null"`
	Amount      Amount        `gorm:"not null"`
	PlatformFee Amount        `gorm:"not null"`
	NetAmount   Amount        `gorm:"not null"`
	Currency    string        `gorm:"not null"`
	Status      PaymentStatus `gorm:"not null"`
	Acquirer    string        `gorm:"not null"`
	QRPayload   string        `gorm:"column:qr_payload;not null"`
	// RequestSignature is the lowercase hex signature of the create,
	// unique per client (as Disbursement.RequestSignature); nil when the
	// create was not signed or the row is older.
	RequestSignature     *string
	ExpiredAt            time.Time
	PaidAt               *time.Time
	RetrievalReferenceNo *string
	FailedReason         *string
	SettleAt             *time.Time
	SettledAt            *time.Time
	// PaidAtReported is the acquirer's paid_at as reported; PaidAt is it
	// clamped to [CreatedAt, the time the result was applied], so that the
	// acquirer cannot move the settlement day (T+1).
	PaidAtReported *time.Time
	// ReportedAmount and HoldReason record a SUCCESS the acquirer reported
	// with an amount other than the price: not applied, the payment stays
	// PENDING, and operators resolve it (reconcile names it).
	ReportedAmount *Amount
	HoldReason     *string
	// SettlementError says why the settlement was refused (the wallet would
	// pass MaxBalance, say). Set, the sweep leaves the payment alone until
	// an operator clears it; reconcile reports it as a problem.
	SettlementError *string
	CreatedAt       time.Time
	UpdatedAt       time.Time
}

// PaymentLateResult is an acquirer result that arrived for a payment no
// longer PENDING; operators decide what to do with it.
type PaymentLateResult struct {
	ID                   int64     `gorm:"primaryKey;autoIncrement"`
	PaymentID            uuid.UUID `gorm:"type:uuid;not null"`
	PaymentStatus        PaymentStatus
	ReportedStatus       string
	RetrievalReferenceNo *string
	Source               string
	ReceivedAt           time.Time
}
