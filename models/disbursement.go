package models

import (
	"fmt"
	"time"

	"github.com/google/uuid"
)

// DisbursementStatus is where a payout is in its lifecycle (docs/design.md,
// Disbursement lifecycle). Non-terminal statuses hold the gross amount
// locked in the wallet; terminal ones have released it.
type DisbursementStatus string

const (
	// StatusPendingVerification: at or above the client's review threshold;
	// funds locked, waiting for an operator to approve or cancel.
	StatusPendingVerification DisbursementStatus = "PENDING_VERIFICATION"
	// StatusVerified: inquiry passed, funds locked, waiting for submission.
	StatusVerified DisbursementStatus = "VERIFIED"
	// StatusRequested: the vendor accepted the payout; money may be in
	// flight. It never expires: it is polled until final.
	StatusRequested DisbursementStatus = "REQUESTED"
	// StatusSuccess: paid. The gross left the wallet (net to the vendor,
	// fee to the platform).
	StatusSuccess DisbursementStatus = "SUCCESS"
	// StatusFailed: the vendor refused or returned the payout; no money
	// moved.
	StatusFailed DisbursementStatus = "FAILED"
	// StatusExpired: the lock's time ran out before submission.
	StatusExpired DisbursementStatus = "EXPIRED"
	// StatusCancelled: an operator cancelled it before submission.
	StatusCancelled DisbursementStatus = "CANCELLED"
	// StatusReturned: paid, then returned (or reversed) by the bank: the
	// net came back to the wallet as its own ledger movement; the fee is
	// kept unless the client's settings refund it. Terminal.
	StatusReturned DisbursementStatus = "RETURNED"
)

// statusCreated is the "from" of a disbursement being created: the moves
// out of it are the statuses a create may store.
const statusCreated DisbursementStatus = ""

// disbursementMoves is the whole table of allowed moves. Every other move
// is refused, including a move to the status a disbursement already has.
var disbursementMoves = map[DisbursementStatus][]DisbursementStatus{
	statusCreated:             {StatusPendingVerification, StatusVerified},
	StatusPendingVerification: {StatusVerified, StatusCancelled, StatusExpired},
	StatusVerified:            {StatusRequested, StatusFailed, StatusCancelled, StatusExpired},
	StatusRequested:           {StatusSuccess, StatusFailed},
	// A bank may return a transfer days after it was paid.
	StatusSuccess: {StatusReturned},
}

// DisbursementStatuses lists every status, in lifecycle order.
var DisbursementStatuses = []DisbursementStatus{
	StatusPendingVerification, StatusVerified, StatusRequested,
	StatusSuccess, StatusFailed, StatusExpired, StatusCancelled, StatusReturned,
}

// CanMoveTo reports whether the lifecycle allows from → to.
func (from DisbursementStatus) CanMoveTo(to DisbursementStatus) bool {
	for _, allowed := range disbursementMoves[from] {
		if allowed == to {
			return true
		}
	}
	return false
}

// CanCreateAs reports whether a new disbursement may be stored with s.
func CanCreateAs(s DisbursementStatus) bool { return statusCreated.CanMoveTo(s) }

// Terminal reports whether s is final: the lock is released and no vendor
// result moves it again, except a bank's return of a SUCCESS payout.
func (s DisbursementStatus) Terminal() bool {
	switch s {
	case StatusSuccess, StatusFailed, StatusExpired, StatusCancelled, StatusReturned:
		return true
	}
	return false
}

// Valid reports whether s is one of the statuses.
func (s DisbursementStatus) Valid() bool {
	for _, v := range DisbursementStatuses {
		if v == s {
			return true
		}
	}
	return false
}

// ParseTransferType accepts "BIFAST" or "RTOL" exactly.
func ParseTransferType(s string) (TransferType, error) {
	switch TransferType(s) {
	case BIFAST, RTOL:
		return TransferType(s), nil
	}
	return "", fmt.Errorf("transfer_type must be BIFAST or RTOL")
}

// Disbursement is a payout from a client's wallet to a bank account or
// e-wallet. The row is also the create's idempotency record: the key is
// unique per client and the compared parameters are its columns.
type Disbursement struct {
	ID                uuid.UUID          `gorm:"type:uuid;primaryKey"`
	ClientID          uuid.UUID          `gorm:"type:uuid;not null"`
	WalletID          uuid.UUID          `gorm:"type:uuid;not null"`
	IdempotencyKey    string             `gorm:"not null"`
	Status            DisbursementStatus `gorm:"not null"`
	Amount            Amount             `gorm:"not null"` // gross: what leaves the wallet
	PlatformFee       Amount             `gorm:"not null"`
	NetAmount         Amount             `gorm:"not null"` // what the vendor transfers
	Currency          string             `gorm:"not null"`
	TransferType      TransferType       `gorm:"not null"`
	BankCode          string             `gorm:"not null"` // lowercase
	BankName          string             `gorm:"not null"`
	AccountNo         string             `gorm:"not null"` // trimmed digits
	AccountHolderName string             `gorm:"not null"` // the name the payout is sent with
	// SuppliedHolderName is the account_holder_name of the create ("" for
	// none), kept to compare a replay's with it.
	SuppliedHolderName string `gorm:"not null;default:''"`
	Memo               *string
	ReferenceID        *string
	// RequestSignature is the lowercase hex signature (v1 or v2) the
	// create was signed with; unique per client, so that no loss of the
	// used-signature records in Redis lets one signature create twice.
	// nil for rows of earlier versions and for creates made by operators.
	RequestSignature *string
	Vendor           string `gorm:"not null"`
	// VendorReference is the vendor's idempotency key for this payout,
	// derived from ID: submitting it twice pays once.
	VendorReference   string `gorm:"not null"`
	FailedReason      *string
	LockExpiresAt     time.Time
	SubmitAttemptedAt *time.Time
	// SubmitAttempts counts the calls asking the vendor to pay; it is the
	// optimistic guard between concurrent submitters and the expiry.
	SubmitAttempts int `gorm:"not null"`
	// Checks counts the vendor status checks of a REQUESTED payout; it
	// drives the poll backoff.
	Checks      int `gorm:"not null"`
	NextCheckAt *time.Time
	RequestedAt *time.Time
	CompletedAt *time.Time
	// ReturnedAt is when a paid payout was returned by the bank (RETURNED).
	ReturnedAt *time.Time
	// RefundedFee is the part of the platform fee credited back on a
	// return: 0 when the fee was kept (the default), the whole fee when the
	// client's settings refund it. Reconcile needs it: the setting may
	// change after the return.
	RefundedFee Amount `gorm:"not null"`
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// VendorReferenceFor derives the vendor reference from a disbursement id.
func VendorReferenceFor(id uuid.UUID) string { return "pd-" + id.String() }

// DisbursementTransition is one line of a disbursement's audit trail.
type DisbursementTransition struct {
	ID             int64     `gorm:"primaryKey;autoIncrement"`
	DisbursementID uuid.UUID `gorm:"type:uuid;not null"`
	FromStatus     DisbursementStatus
	ToStatus       DisbursementStatus
	Reason         string
	CreatedAt      time.Time
}

// Sources of a vendor result.
const (
	SourceCallback = "callback" // the vendor pushed it (and its status query confirmed it)
	SourcePoll     = "poll"     // the service asked the vendor's status
)

// DisbursementLateResult is a vendor result that contradicts a payout's
// stored final status (FAILED after SUCCESS, SUCCESS after FAILED, ...):
// never applied, kept once per disbursement and reported status until an
// operator resolves it. A return after SUCCESS is not one: it is applied.
type DisbursementLateResult struct {
	ID              int64              `gorm:"primaryKey;autoIncrement"`
	DisbursementID  uuid.UUID          `gorm:"type:uuid;not null"`
	Vendor          string             `gorm:"not null"`
	VendorReference string             `gorm:"not null"`
	StoredStatus    DisbursementStatus `gorm:"not null"`
	ReportedStatus  string             `gorm:"not null"`
	Reason          string             `gorm:"not null"` // the vendor's failure or return reason, if any
	Source          string             `gorm:"not null"` // SourceCallback or SourcePoll, as first seen
	FirstSeenAt     time.Time
	LastSeenAt      time.Time
	SeenCount       int `gorm:"not null"`
	ResolvedAt      *time.Time
	ResolvedBy      *string
	Note            *string
}
