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
	CreatedAt time.Time
	UpdatedAt time.Time
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
