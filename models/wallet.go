package models

import (
	"time"

	"github.com/google/uuid"
)

// WalletState is the provisioning state of a wallet at its vendor.
type WalletState string

const (
	// WalletProvisioning wallets exist but are not usable yet; the API
	// answers 404 for them.
	WalletProvisioning WalletState = "provisioning"
	// WalletActive wallets are fully provisioned.
	WalletActive WalletState = "active"
)

// Wallet is a client's wallet, tied to one vendor wallet.
//
// Balance is the settled ledger balance (it may be negative after an
// operator adjustment); Locked is the sum of the gross amounts of in-flight
// disbursements. Available = Balance - Locked.
type Wallet struct {
	ID        uuid.UUID   `gorm:"type:uuid;primaryKey"`
	ClientID  uuid.UUID   `gorm:"type:uuid;not null"`
	Name      string      `gorm:"not null"`
	Vendor    string      `gorm:"not null"`
	State     WalletState `gorm:"not null"`
	IsDefault bool        `gorm:"not null"`
	Balance   Amount      `gorm:"not null"`
	Locked    Amount      `gorm:"not null"`
	// StatementSeq is the number of the wallet's last statement line (0:
	// none yet); the ledger advances it with every change of Balance or
	// Locked.
	StatementSeq int64 `gorm:"not null;default:0"`
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

// Available is the balance a new disbursement may lock.
func (w *Wallet) Available() Amount { return w.Balance - w.Locked }

// LedgerAccount names the wallet's account in the ledger.
func (w *Wallet) LedgerAccount() string { return WalletAccount(w.ID) }

// WalletAccount is the ledger account of a wallet.
func WalletAccount(id uuid.UUID) string { return "wallet:" + id.String() }

// System ledger accounts: the other side of every wallet movement, so that
// each ledger transaction sums to zero.
const (
	// AccountAdjustments is the counterpart of operator adjustments.
	AccountAdjustments = "system:adjustments"
	// AccountPlatformFees collects platform fees.
	AccountPlatformFees = "system:platform_fees"
	// AccountVendorClearingPrefix + vendor name holds money handed to a
	// payout vendor and not yet reconciled with it.
	AccountVendorClearingPrefix = "system:vendor_clearing:"
	// AccountAcquirerClearing holds collected payments awaiting settlement.
	AccountAcquirerClearing = "system:acquirer_clearing"
)

// VendorClearingAccount is the ledger account of money handed to a vendor.
func VendorClearingAccount(vendor string) string { return AccountVendorClearingPrefix + vendor }

// LedgerTransaction groups entries that move money together; its entries
// sum to zero.
type LedgerTransaction struct {
	ID        uuid.UUID `gorm:"type:uuid;primaryKey"`
	Kind      string    `gorm:"not null"`
	Memo      string    `gorm:"not null"`
	Reference string    `gorm:"not null"`
	CreatedAt time.Time
}

// LedgerEntry is one append-only line of the ledger.
type LedgerEntry struct {
	ID            int64     `gorm:"primaryKey;autoIncrement"`
	TransactionID uuid.UUID `gorm:"type:uuid;not null"`
	Account       string    `gorm:"not null"`
	Amount        Amount    `gorm:"not null"`
	CreatedAt     time.Time
}

// StatementKind says what a wallet statement line records.
type StatementKind string

// The kinds of statement lines. A payout's lock takes its gross from the
// available balance (payout_locked); when it is paid, payout_debited (the
// net) and fee take the gross from the settled balance and the lock
// together, so available does not move again; when it ends unpaid,
// payout_released gives the gross back to available.
const (
	StatementOpeningBalance StatementKind = "opening_balance" // the balance when statements began
	StatementPaymentSettled StatementKind = "payment_settled"
	StatementPayoutLocked   StatementKind = "payout_locked"
	StatementPayoutReleased StatementKind = "payout_released"
	StatementPayoutDebited  StatementKind = "payout_debited"
	StatementFee            StatementKind = "fee" // a payout's fee, or its refund on a return
	StatementPayoutReturned StatementKind = "payout_returned"
	StatementAdjustment     StatementKind = "adjustment"
)

// StatementKinds lists every kind, for validation and documentation.
var StatementKinds = []StatementKind{StatementOpeningBalance, StatementPaymentSettled, StatementPayoutLocked,
	StatementPayoutReleased, StatementPayoutDebited, StatementFee, StatementPayoutReturned, StatementAdjustment}

// StatementLine is one line of a wallet's statement: a change of its
// settled balance (BalanceChange) or of its lock (LockedChange), and both
// after it. Lines are written only by the ledger, with the change itself.
type StatementLine struct {
	WalletID            uuid.UUID     `gorm:"type:uuid;primaryKey"`
	Seq                 int64         `gorm:"primaryKey;autoIncrement:false"`
	Kind                StatementKind `gorm:"not null"`
	BalanceChange       Amount        `gorm:"not null"`
	LockedChange        Amount        `gorm:"not null"`
	BalanceAfter        Amount        `gorm:"not null"`
	LockedAfter         Amount        `gorm:"not null"`
	DisbursementID      *uuid.UUID    `gorm:"type:uuid"`
	PaymentID           *uuid.UUID    `gorm:"type:uuid"`
	LedgerTransactionID *uuid.UUID    `gorm:"type:uuid"`
	Memo                string        `gorm:"not null"`
	CreatedAt           time.Time
}

// TableName is the statement's table.
func (StatementLine) TableName() string { return "wallet_statement" }

// AvailableChange is the line's change of the available balance.
func (l *StatementLine) AvailableChange() Amount { return l.BalanceChange - l.LockedChange }

// AvailableAfter is the available balance after the line.
func (l *StatementLine) AvailableAfter() Amount { return l.BalanceAfter - l.LockedAfter }
