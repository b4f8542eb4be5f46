package models

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"
)

// Driver is what the domain needs from its database beyond gorm and the
// SQL both dialects share: the operations whose statements differ between
// PostgreSQL and SQLite, in the domain's terms. Each dialect has one
// implementation (internal/database/pgdriver, internal/database/sqlitedriver)
// that holds every statement text that differs, and so the domain never
// asks which database it runs on.
//
// It is one interface, not one per consumer, because one *gorm.DB carries
// one driver and every consumer reaches it the same way (DriverOf): a
// single type per dialect that must implement all of it (each driver
// package asserts it at compile time) cannot forget an operation that a
// narrow interface declared elsewhere would only miss at run time. The
// groups below say who uses what.
//
// The driver is a gorm plugin: internal/database.Open installs the one of
// the dialect it opens (db.Use), and every session and transaction derived
// from that handle shares it.
type Driver interface {
	gorm.Plugin
	MoneyDriver
	PayoutDriver
	WebhookDriver
	ReconcileDriver

	// IsRetryable reports whether err is the database giving up a
	// transaction that may simply run again (a deadlock victim, a
	// serialization failure): nothing of it was written.
	IsRetryable(err error) bool

	// FindWallets reads the wallets with the ids, in no particular order,
	// with the columns Store.FindWallets returns, in one statement whose
	// text does not change with the number of ids where the database can
	// bind an array.
	FindWallets(ctx context.Context, db *gorm.DB, ids []uuid.UUID) ([]Wallet, error)
}

// DriverName is the name the driver is installed under as a gorm plugin.
const DriverName = "payoutd:driver"

// DriverOf returns the driver installed on db (internal/database.Open
// installs it). A handle without one is a programming error (a gorm.Open
// outside internal/database), so DriverOf panics and says so rather than
// return something a caller would have to check at every statement.
func DriverOf(db *gorm.DB) Driver {
	d, err := LookupDriver(db)
	if err != nil {
		panic(err)
	}
	return d
}

// LookupDriver is DriverOf that returns the error instead of panicking.
func LookupDriver(db *gorm.DB) (Driver, error) {
	if db == nil || db.Config == nil {
		return nil, fmt.Errorf("models: no database handle, so no driver (open it with internal/database.Open)")
	}
	p, ok := db.Config.Plugins[DriverName]
	if !ok {
		return nil, fmt.Errorf("models: the database handle has no %s plugin installed: open it with internal/database.Open, which installs the driver of its dialect", DriverName)
	}
	d, ok := p.(Driver)
	if !ok {
		return nil, fmt.Errorf("models: the %s plugin is a %T, not a models.Driver", DriverName, p)
	}
	return d, nil
}

// MoneyDriver writes money: the ledger's statements that move wallets'
// balances and locks, under the invariants ledger/wallets.go states.
type MoneyDriver interface {
	// OpenDisbursements is ledger.OpenDisbursements: it writes the new
	// disbursements, each with the lock of its gross on its wallet, its
	// payout_locked statement line and its first audit line; the
	// disbursements of one wallet lock their summed gross together, and a
	// wallet that cannot cover the sum (or is not active) takes none. It
	// returns the ids written; all or nothing on error.
	OpenDisbursements(ctx context.Context, db *gorm.DB, ds []*Disbursement) (map[uuid.UUID]bool, error)
	// LockFunds locks change.Lock on the active wallet walletID with one
	// conditional update (its available balance must cover it) and writes
	// change.Lines: false, and nothing written, when refused.
	LockFunds(tx *gorm.DB, walletID uuid.UUID, change *WalletChange, now time.Time) (bool, error)
	// ApplyWalletChanges inserts the postings (ledger transactions ids[i]
	// for ps[i], with their entries) and applies changes[i] to wallet
	// order[i], in that order (wallet id order), with its statement lines.
	// It returns the first wallet, in order, whose guard refused its change
	// (uuid.Nil when every wallet took its own): the caller reports why, and
	// its transaction rolls back.
	ApplyWalletChanges(tx *gorm.DB, order []uuid.UUID, changes []*WalletChange, ids []uuid.UUID,
		ps []Posting, now time.Time) (refused uuid.UUID, err error)
	// UpdateWallet applies one wallet's change to its row alone (no
	// statement lines) with the guard ApplyWalletChanges uses: the lock
	// covers the release and the balance stays within ±MaxBalance. false
	// when the guard refused it.
	UpdateWallet(tx *gorm.DB, walletID uuid.UUID, change *WalletChange, now time.Time) (WalletAfter, bool, error)
}

// PayoutDriver moves payouts: the statements that take their rows' locks.
// The lock order of a transaction that moves payouts and their money is
// ledger's (ledger/locks.go); a database whose writers hold the whole
// database (SQLite) has no row locks to take.
type PayoutDriver interface {
	// LockPayouts takes the row locks of the disbursements ids, in id
	// order, in tx.
	LockPayouts(tx *gorm.DB, ids []uuid.UUID) error
	// LockWallets takes the row locks of the wallets ids, in id order, in
	// tx.
	LockWallets(tx *gorm.DB, ids []uuid.UUID) error
	// MovePayouts writes one status update of payouts (PayoutMove) and its
	// audit lines, and returns how many rows it updated: fewer than
	// len(m.IDs) when some are no longer in m.From (the caller's
	// transaction then rolls back).
	MovePayouts(tx *gorm.DB, m PayoutMove) (int64, error)
	// ClaimDueSubmits claims up to limit payouts due for their first
	// submit (verified, never attempted), of the ready vendors, created and
	// still locked at now, oldest due first: their first attempt is
	// recorded with a lease until leaseEnd. Claimers never wait for one
	// another's rows. It returns the rows as the claim left them.
	ClaimDueSubmits(db *gorm.DB, now, leaseEnd time.Time, ready []string, limit int) ([]Disbursement, error)
	// ClaimSubmits claims the next submit attempt of the verified payouts
	// ids whose attempts are still as read and that are still locked at
	// now, with a lease until leaseEnd, taking their rows' locks in id
	// order; it returns the ids claimed.
	ClaimSubmits(db *gorm.DB, ids []uuid.UUID, read AttemptsRead, now, leaseEnd time.Time) ([]uuid.UUID, error)
}

// AttemptsRead is what a claimer read of its payouts' submit attempts:
// how many, and when the latest was claimed (nil before the first). A
// claim takes rows with that many attempts, the latest claimed no later
// than LatestAt. The count alone is not enough: an attempt refused before
// it left is given back (1 -> 0) and may be claimed again (0 -> 1), the
// count back where a stale reader saw it while the new attempt is on its
// way; its later time tells them apart.
type AttemptsRead struct {
	Count    int
	LatestAt *time.Time
}

// Guard is the condition that a disbursement's attempts are still as
// read, with ? for its arguments, which it returns: the drivers' claims
// and moves share it.
func (r AttemptsRead) Guard() (string, []any) {
	if r.LatestAt == nil {
		return "submit_attempts = ?", []any{r.Count}
	}
	return "submit_attempts = ? AND submit_attempted_at <= ?", []any{r.Count, *r.LatestAt}
}

// WebhookDriver records webhook events.
type WebhookDriver interface {
	// RecordWebhookEvents inserts events, built by the caller with their
	// ids, bodies and state pending: each subject's events are numbered
	// (Sequence) in the order given after its stored ones, and an event of
	// a client without a URL for its target is stored as no_url with no
	// due time; events are updated to what was stored. A client that does
	// not exist is gorm.ErrRecordNotFound.
	RecordWebhookEvents(tx *gorm.DB, events []WebhookEvent, now time.Time) error
}

// ReconcileDriver is the reads of the ledger's reconciliation whose sums
// must be exact whatever they add up to: each database sums a BIGINT
// column its own way (ReconcileRead).
type ReconcileDriver interface {
	// SnapshotTxOptions are the options of a read-only transaction whose
	// statements all see one moment; nil where the database runs the
	// transaction alone (SQLite's one connection).
	SnapshotTxOptions() *sql.TxOptions
	// ReconcileQuery is read with args, ready to Scan: its sum columns read
	// into a ledger total.
	ReconcileQuery(tx *gorm.DB, read ReconcileRead, args ...any) *gorm.DB
}

// ReconcileRead names one read of the reconciliation (ledger.Reconcile).
// Each sum column is exact: text on PostgreSQL, "hi:lo" halves on SQLite.
type ReconcileRead int

const (
	// ReadUnbalancedTransactions: transaction_id, total, for each ledger
	// transaction whose entries may not sum to zero.
	ReadUnbalancedTransactions ReconcileRead = iota
	// ReadWalletEntries: id, balance, locked, entries (the sum of the
	// wallet's ledger entries), for each wallet in id order.
	ReadWalletEntries
	// ReadAccountTotals: account, total, of the accounts LIKE args[0],
	// in account order.
	ReadAccountTotals
	// ReadWalletLocks: id, locked, open (the gross of the wallet's
	// disbursements of the statuses args[0]), for each wallet in id order.
	ReadWalletLocks
	// ReadPaidByVendor: vendor, net, fees, of the disbursements of status
	// args[0], by vendor.
	ReadPaidByVendor
	// ReadFeesAndRefunds: fees, refunded (the platform and refunded fees
	// of the disbursements of status args[0]).
	ReadFeesAndRefunds
	// ReadFeeEntries: total, the entries of account args[0] in ledger
	// transactions of kind args[1].
	ReadFeeEntries
	// ReadSettledPayments: settled, fees, of the settled payments.
	ReadSettledPayments
	// ReadAccountTotal: total, of the entries of account args[0].
	ReadAccountTotal
)

// WalletChange is what one money statement does to one wallet.
type WalletChange struct {
	Balance Amount // added to the balance
	Release Amount // taken off the lock
	Lock    Amount // added to the lock (LockFunds)
	// Lines are the statement lines of the change, in order; their balance
	// changes sum to Balance and their lock changes to Lock-Release.
	Lines []StatementChange
}

// StatementChange is a statement line to write: what it records and its
// changes. Its sequence number and the balances after it are known only
// once the wallet's row is updated (WalletAfter).
type StatementChange struct {
	Kind           StatementKind
	Balance        Amount // added to the balance
	Locked         Amount // added to the lock
	DisbursementID *uuid.UUID
	PaymentID      *uuid.UUID
	TxnID          *uuid.UUID
	Memo           string
}

// WalletAfter is a wallet's row as a money update left it: what its
// statement lines are numbered and balanced from.
type WalletAfter struct {
	ID           uuid.UUID
	Balance      Amount
	Locked       Amount
	StatementSeq int64
	UpdatedAt    time.Time
}

// PostingEntry is one line of a posting: amount added to account
// (negative takes).
type PostingEntry struct {
	Account string
	Amount  Amount
	// Line is the kind of the statement line a wallet entry makes; empty
	// means the posting kind's usual one.
	Line StatementKind
}

// Posting is a balanced set of entries with what caused it (the ledger's
// Posting).
type Posting struct {
	Kind      string // e.g. "adjustment", "payout", "settlement"
	Memo      string
	Reference string // id of the disbursement, payment, ... it records
	Entries   []PostingEntry
}

// PayoutMove is one status update of payouts that are all in From: Set's
// columns (column name to value) are written, guarded by the status (and,
// with IfAttempts, the submit attempts), and each payout gets one
// audit line per step, at At. With Lock the update takes the rows' locks
// itself, in id order, as LockPayouts would (the caller has not).
type PayoutMove struct {
	IDs        []uuid.UUID
	From       DisbursementStatus
	Set        map[string]any
	IfAttempts *AttemptsRead
	Steps      []TransitionStep
	At         time.Time
	Lock       bool
}

// TransitionStep is one audit line of a move: from, to and why.
type TransitionStep struct {
	From, To DisbursementStatus
	Reason   string
}

// StatementLines are the statement lines of change c of wallet id, whose
// row the change left as after: numbered up to after's statement_seq, each
// with the balance and lock after it, worked back from after (a driver
// that writes them in SQL does the same there).
func (c *WalletChange) StatementLines(id uuid.UUID, after WalletAfter) []StatementLine {
	n := len(c.Lines)
	rows := make([]StatementLine, n)
	balance, locked := after.Balance, after.Locked
	for i := n - 1; i >= 0; i-- {
		l := c.Lines[i]
		rows[i] = StatementLine{WalletID: id, Seq: after.StatementSeq - int64(n-1-i), Kind: l.Kind,
			BalanceChange: l.Balance, LockedChange: l.Locked, BalanceAfter: balance, LockedAfter: locked,
			DisbursementID: l.DisbursementID, PaymentID: l.PaymentID, LedgerTransactionID: l.TxnID, Memo: l.Memo,
			CreatedAt: after.UpdatedAt}
		balance, locked = balance-l.Balance, locked-l.Locked
	}
	return rows
}
