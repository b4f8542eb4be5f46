package ledger

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"time"

	"github.com/shopspring/decimal"
	"gorm.io/gorm"

	"github.com/payoutd/payoutd/models"
)

// Report is the outcome of Reconcile. OK is false when any invariant fails;
// Problems says which, one line each.
type Report struct {
	OK bool `json:"ok"`
	// CheckedAt is the caller's clock when the check ran; the warnings
	// about overdue work are judged by it.
	CheckedAt      time.Time         `json:"checked_at"`
	Wallets        int               `json:"wallets_checked"`
	Transactions   int               `json:"transactions_checked"`
	SystemAccounts map[string]string `json:"system_accounts"`
	Problems       []string          `json:"problems"`
	// Warnings need an operator's eye but break no invariant (a payout
	// REQUESTED for a long time, money possibly in flight).
	Warnings []string `json:"warnings"`
}

// StuckAfter is how long a payout may stay REQUESTED before reconcile
// names it.
const StuckAfter = time.Hour

// Reconcile checks, as of now (the caller's clock), that
//   - every ledger transaction sums to zero, and so the whole ledger does;
//   - each wallet's balance equals the sum of its entries;
//   - each wallet's lock equals the gross of its non-terminal disbursements
//     (and so is never negative);
//   - each wallet's statement is whole: lines 1 to statement_seq, each
//     line's balance and lock after it those after the line before plus its
//     changes, the last showing the wallet's balance and lock;
//   - each vendor's clearing account equals the net of its paid
//     disbursements (a returned one's net came back out of it), the payout
//     fees the fees of paid and returned disbursements, and the fees
//     refunded on returns the refunded fees;
//   - no vendor result contradicting a final disbursement is unresolved
//     (disbursement_late_results: money may be where the books say it
//     is not until an operator has looked);
//   - the acquirer clearing account equals minus the price of settled
//     payments, and the settlement fees their fees;
//   - no settlement was refused (payments' settlement_error).
//
// Sums are exact whatever they add up to (the driver's ReconcileQuery
// reads them as text, total): a figure beyond
// int64 is shown, never an error, and a stored value that cannot be an
// amount (a REAL on SQLite) is a failed invariant naming its row.
//
// It reads in one transaction so the figures are from one moment: on
// PostgreSQL a read-only REPEATABLE READ one, whose snapshot every statement
// shares (at READ COMMITTED a payout paid between two of its reads would be
// a false problem); SQLite runs it alone on its one connection.
func Reconcile(ctx context.Context, db *gorm.DB, now time.Time) (*Report, error) {
	report := &Report{CheckedAt: now.UTC(), SystemAccounts: map[string]string{}, Problems: []string{}, Warnings: []string{}}
	var opts []*sql.TxOptions
	drv := models.DriverOf(db)
	if o := drv.SnapshotTxOptions(); o != nil {
		opts = append(opts, o)
	}
	r := &reconciler{report: report, drv: drv, now: report.CheckedAt}
	err := db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		for _, check := range []func(*gorm.DB) error{
			r.checkTransactions, r.checkWallets, r.checkLocks, r.checkStatements, r.checkPayoutAccounts, r.checkSettlements,
			r.refusedSettlements, r.checkLateVendorResults, r.warnStuckPayouts, r.warnUnsettled, r.warnLateResults, r.warnHeldPayments, r.systemBalances,
		} {
			if err := check(tx); err != nil {
				return err
			}
		}
		return nil
	}, opts...)
	if err != nil {
		return nil, err
	}
	report.OK = len(report.Problems) == 0
	return report, nil
}

// reconciler is one run of Reconcile.
type reconciler struct {
	report *Report
	drv    models.ReconcileDriver
	now    time.Time
}

func (r *reconciler) problem(format string, args ...any) {
	r.report.Problems = append(r.report.Problems, fmt.Sprintf(format, args...))
}

// total is an exact sum or stored amount as read: nil (no rows) is zero;
// Bad holds what was read when it cannot be an integer amount.
type total struct {
	V   big.Int
	Bad string
}

var two32 = big.NewInt(1 << 32)

// Value implements driver.Valuer, which gorm needs to read a total as one
// column; a total is never written.
func (t total) Value() (driver.Value, error) { return t.V.String(), nil }

// Scan implements sql.Scanner.
func (t *total) Scan(src any) error {
	t.V.SetInt64(0)
	t.Bad = ""
	var text string
	switch v := src.(type) {
	case nil:
		return nil
	case int64:
		t.V.SetInt64(v)
		return nil
	case []byte:
		text = string(v)
	case string:
		text = v
	default:
		t.Bad = fmt.Sprint(v)
		return nil
	}
	hi, lo, split := strings.Cut(text, ":")
	if !split {
		if _, ok := t.V.SetString(text, 10); !ok {
			t.Bad = text
		}
		return nil
	}
	var h, l big.Int
	if _, ok := h.SetString(hi, 10); !ok {
		t.Bad = text
		return nil
	}
	if _, ok := l.SetString(lo, 10); !ok {
		t.Bad = text
		return nil
	}
	t.V.Add(h.Mul(&h, two32), &l)
	return nil
}

// String renders the total as a balance, "100000.0000", however large.
func (t *total) String() string {
	if t.Bad != "" {
		return fmt.Sprintf("%q (not an integer amount)", t.Bad)
	}
	return decimal.NewFromBigInt(&t.V, -models.AmountScale).StringFixed(models.AmountScale)
}

func (t *total) equal(o *total) bool { return t.Bad == "" && o.Bad == "" && t.V.Cmp(&o.V) == 0 }

func (t *total) isZero() bool { return t.Bad == "" && t.V.Sign() == 0 }

func (t *total) neg() *total {
	n := &total{Bad: t.Bad}
	n.V.Neg(&t.V)
	return n
}

func (r *reconciler) checkTransactions(tx *gorm.DB) error {
	var count int64
	if err := tx.Model(&models.LedgerTransaction{}).Count(&count).Error; err != nil {
		return err
	}
	r.report.Transactions = int(count)
	var unbalanced []struct {
		TransactionID string
		Total         total
	}
	err := r.drv.ReconcileQuery(tx, models.ReadUnbalancedTransactions).Scan(&unbalanced).Error
	if err != nil {
		return err
	}
	for _, u := range unbalanced {
		if !u.Total.isZero() {
			r.problem("ledger transaction %s does not balance: entries sum to %s", u.TransactionID, u.Total.String())
		}
	}
	var orphans int64
	err = tx.Model(&models.LedgerTransaction{}).
		Where("NOT EXISTS (SELECT 1 FROM ledger_entries e WHERE e.transaction_id = ledger_transactions.id)").
		Count(&orphans).Error
	if err != nil {
		return err
	}
	if orphans > 0 {
		r.problem("%d ledger transactions have no entries", orphans)
	}
	return nil
}

func (r *reconciler) checkWallets(tx *gorm.DB) error {
	var rows []struct {
		ID      string
		Balance total
		Locked  total
		Entries total
	}
	err := r.drv.ReconcileQuery(tx, models.ReadWalletEntries).Scan(&rows).Error
	if err != nil {
		return err
	}
	r.report.Wallets = len(rows)
	limit := &total{}
	limit.V.SetInt64(int64(models.MaxBalance))
	for _, w := range rows {
		if !w.Balance.equal(&w.Entries) {
			r.problem("wallet %s: balance %s differs from the sum of its ledger entries %s", w.ID, w.Balance.String(), w.Entries.String())
		}
		if w.Locked.Bad == "" && w.Locked.V.Sign() < 0 {
			r.problem("wallet %s: negative lock %s", w.ID, w.Locked.String())
		}
		for _, v := range []struct {
			name string
			t    *total
		}{{"balance", &w.Balance}, {"lock", &w.Locked}} {
			if v.t.Bad != "" || new(big.Int).Abs(&v.t.V).Cmp(&limit.V) > 0 {
				r.problem("wallet %s: %s %s is outside ±%s", w.ID, v.name, v.t.String(), limit.String())
			}
		}
	}
	return nil
}

func (r *reconciler) systemBalances(tx *gorm.DB) error {
	var rows []struct {
		Account string
		Total   total
	}
	err := r.drv.ReconcileQuery(tx, models.ReadAccountTotals, "system:%").Scan(&rows).Error
	if err != nil {
		return err
	}
	for _, a := range rows {
		r.report.SystemAccounts[a.Account] = a.Total.String()
	}
	return nil
}

// openStatuses hold a lock.
var openStatuses = []models.DisbursementStatus{models.StatusPendingVerification, models.StatusVerified, models.StatusRequested}

func (r *reconciler) checkLocks(tx *gorm.DB) error {
	var rows []struct {
		ID     string
		Locked total
		Open   total
	}
	err := r.drv.ReconcileQuery(tx, models.ReadWalletLocks, openStatuses).Scan(&rows).Error
	if err != nil {
		return err
	}
	for _, w := range rows {
		if !w.Locked.equal(&w.Open) {
			r.problem("wallet %s: locked %s differs from the gross of its open disbursements %s", w.ID, w.Locked.String(), w.Open.String())
		}
	}
	return nil
}

// checkStatements checks every wallet's statement lines (at most 20
// broken links are named: one broken line breaks the rest of its chain
// only where the next line repeats the error).
func (r *reconciler) checkStatements(tx *gorm.DB) error {
	var ends []struct {
		ID           string
		Balance      total
		Locked       total
		StatementSeq int64
		Lines        int64
		BalanceAfter total
		LockedAfter  total
	}
	err := tx.Raw(`SELECT w.id, w.balance, w.locked, w.statement_seq,
	        (SELECT count(*) FROM wallet_statement s WHERE s.wallet_id = w.id) AS lines,
	        l.balance_after, l.locked_after
	        FROM wallets w LEFT JOIN wallet_statement l ON l.wallet_id = w.id AND l.seq = w.statement_seq
	        ORDER BY w.id`).Scan(&ends).Error
	if err != nil {
		return err
	}
	for _, w := range ends {
		switch {
		case w.Lines != w.StatementSeq:
			r.problem("wallet %s: statement has %d lines, numbered up to %d", w.ID, w.Lines, w.StatementSeq)
		case !w.Balance.equal(&w.BalanceAfter) || !w.Locked.equal(&w.LockedAfter):
			// With no line, both must be zero (total reads NULL as zero).
			r.problem("wallet %s: balance %s and lock %s differ from its last statement line's (%s and %s)",
				w.ID, w.Balance.String(), w.Locked.String(), w.BalanceAfter.String(), w.LockedAfter.String())
		}
	}
	var broken []struct {
		WalletID string
		Seq      int64
	}
	err = tx.Raw(`SELECT s.wallet_id, s.seq FROM wallet_statement s
	        LEFT JOIN wallet_statement p ON p.wallet_id = s.wallet_id AND p.seq = s.seq - 1
	        WHERE s.balance_after <> COALESCE(p.balance_after, 0) + s.balance_change
	            OR s.locked_after <> COALESCE(p.locked_after, 0) + s.locked_change
	        ORDER BY s.wallet_id, s.seq LIMIT 20`).Scan(&broken).Error
	if err != nil {
		return err
	}
	for _, b := range broken {
		r.problem("wallet %s: statement line %d does not follow from the line before", b.WalletID, b.Seq)
	}
	return nil
}

// checkPayoutAccounts compares the vendor clearing accounts with the net of
// paid disbursements, and the fee account with their fees.
func (r *reconciler) checkPayoutAccounts(tx *gorm.DB) error {
	netByAccount, feesPaid, refunded, err := r.paidDisbursements(tx)
	if err != nil {
		return err
	}
	clearing, err := r.clearingBalances(tx)
	if err != nil {
		return err
	}
	r.compareClearing(clearing, netByAccount)
	if err := r.compareFees(tx, "payout", feesPaid, "paid and returned disbursements"); err != nil {
		return err
	}
	return r.compareFees(tx, "return", refunded.neg(), "refunds on returned disbursements")
}

// paidDisbursements sums what was paid out: the net of successful
// disbursements by the clearing account of their vendor, the fees of
// successful and returned ones (a returned payout keeps its payout
// posting, fee included, unless refunded by a return posting of its own),
// and the fees refunded on returns.
func (r *reconciler) paidDisbursements(tx *gorm.DB) (netByAccount map[string]*total, feesPaid *total, refunded total, err error) {
	var paid []struct {
		Vendor string
		Net    total
		Fees   total
	}
	err = r.drv.ReconcileQuery(tx, models.ReadPaidByVendor, models.StatusSuccess).Scan(&paid).Error
	if err != nil {
		return nil, nil, refunded, err
	}
	var returnedFees total
	err = r.drv.ReconcileQuery(tx, models.ReadFeesAndRefunds, models.StatusReturned).Row().Scan(&returnedFees, &refunded)
	if err != nil {
		return nil, nil, refunded, err
	}
	feesPaid = &total{Bad: returnedFees.Bad}
	feesPaid.V.Set(&returnedFees.V)
	netByAccount = map[string]*total{}
	for i, p := range paid {
		netByAccount[models.VendorClearingAccount(p.Vendor)] = &paid[i].Net
		if p.Fees.Bad != "" {
			feesPaid.Bad = p.Fees.Bad
		}
		feesPaid.V.Add(&feesPaid.V, &p.Fees.V)
	}
	return netByAccount, feesPaid, refunded, nil
}

// clearingBalances are the ledger's vendor clearing accounts with their
// totals.
func (r *reconciler) clearingBalances(tx *gorm.DB) (map[string]*total, error) {
	var clearing []struct {
		Account string
		Total   total
	}
	err := r.drv.ReconcileQuery(tx, models.ReadAccountTotals, models.AccountVendorClearingPrefix+"%").Scan(&clearing).Error
	if err != nil {
		return nil, err
	}
	got := map[string]*total{}
	for i, c := range clearing {
		got[c.Account] = &clearing[i].Total
	}
	return got, nil
}

// compareClearing reports, in account order, each clearing account whose
// total differs from the net paid through it: an account either side
// lacks counts as zero there.
func (r *reconciler) compareClearing(got, want map[string]*total) {
	accounts := make([]string, 0, len(want)+len(got))
	for account := range want {
		accounts = append(accounts, account)
	}
	for account := range got {
		if _, ok := want[account]; !ok {
			accounts = append(accounts, account)
		}
	}
	slices.Sort(accounts)
	for _, account := range accounts {
		have, expected := got[account], want[account]
		if have == nil {
			have = &total{}
		}
		if expected == nil {
			expected = &total{}
		}
		if !have.equal(expected) {
			r.problem("%s: %s differs from the net of paid disbursements %s", account, have.String(), expected.String())
		}
	}
}

// checkLateVendorResults names each unresolved vendor result that
// contradicted a final disbursement: a problem until an operator resolves
// it (payoutd admin disbursement resolve-late-result).
func (r *reconciler) checkLateVendorResults(tx *gorm.DB) error {
	var open []models.DisbursementLateResult
	if err := tx.Where("resolved_at IS NULL").Order("id").Limit(100).Find(&open).Error; err != nil {
		return err
	}
	for _, l := range open {
		r.problem("disbursement %s: %s (%s) reported %s while it is %s (late result %d, %s, seen %d times since %s); not applied: check with the vendor, then payoutd admin disbursement resolve-late-result --id %d --note TEXT",
			l.DisbursementID, l.Vendor, l.VendorReference, l.ReportedStatus, l.StoredStatus, l.ID, l.Source, l.SeenCount,
			l.FirstSeenAt.UTC().Format(time.RFC3339), l.ID)
	}
	return nil
}

// compareFees compares the platform fee entries of one kind of posting
// with the fees they should add up to.
func (r *reconciler) compareFees(tx *gorm.DB, kind string, want *total, of string) error {
	var got total
	err := r.drv.ReconcileQuery(tx, models.ReadFeeEntries, models.AccountPlatformFees, kind).Row().Scan(&got)
	if err != nil {
		return err
	}
	if !got.equal(want) {
		r.problem("%s: %s fees %s differ from the fees of %s %s", models.AccountPlatformFees, kind, got.String(), of, want.String())
	}
	return nil
}

// checkSettlements compares the acquirer clearing account with the
// settled payments (each settlement takes its price from it) and the
// settlement fees with theirs.
func (r *reconciler) checkSettlements(tx *gorm.DB) error {
	var settled, fees, clearing total
	err := r.drv.ReconcileQuery(tx, models.ReadSettledPayments).Row().Scan(&settled, &fees)
	if err != nil {
		return err
	}
	err = r.drv.ReconcileQuery(tx, models.ReadAccountTotal, models.AccountAcquirerClearing).Row().Scan(&clearing)
	if err != nil {
		return err
	}
	if want := settled.neg(); !clearing.equal(want) {
		r.problem("%s: %s differs from minus the price of settled payments %s", models.AccountAcquirerClearing, clearing.String(), want.String())
	}
	return r.compareFees(tx, "settlement", &fees, "settled payments")
}

// refusedSettlements names payments whose settlement the ledger refused:
// paid, not credited, waiting for an operator (payoutd admin payment
// settle once the cause is resolved).
func (r *reconciler) refusedSettlements(tx *gorm.DB) error {
	var refused []struct {
		ID              string
		SettlementError string
	}
	err := tx.Model(&models.Payment{}).Select("id, settlement_error").
		Where("settlement_error IS NOT NULL AND settled_at IS NULL").Order("settle_at").Limit(100).Scan(&refused).Error
	if err != nil {
		return err
	}
	for _, p := range refused {
		r.problem("payment %s: settlement refused: %s; not credited until an operator settles it", p.ID, p.SettlementError)
	}
	return nil
}

// warnUnsettled names paid payments whose settlement is an hour overdue.
func (r *reconciler) warnUnsettled(tx *gorm.DB) error {
	var late []struct {
		ID       string
		SettleAt time.Time
	}
	err := tx.Model(&models.Payment{}).Select("id, settle_at").
		Where("status = ? AND settled_at IS NULL AND settlement_error IS NULL AND settle_at < ?", models.PaymentSuccess, r.now.Add(-time.Hour)).
		Order("settle_at").Limit(100).Scan(&late).Error
	if err != nil {
		return err
	}
	for _, p := range late {
		r.report.Warnings = append(r.report.Warnings, fmt.Sprintf("payment %s was due to settle at %s and has not",
			p.ID, p.SettleAt.UTC().Format(time.RFC3339)))
	}
	return nil
}

func (r *reconciler) warnStuckPayouts(tx *gorm.DB) error {
	var stuck []struct {
		ID          string
		RequestedAt time.Time
	}
	err := tx.Model(&models.Disbursement{}).Select("id, requested_at").
		Where("status = ? AND requested_at < ?", models.StatusRequested, r.now.Add(-StuckAfter)).
		Order("requested_at").Limit(100).Scan(&stuck).Error
	if err != nil {
		return err
	}
	for _, d := range stuck {
		r.report.Warnings = append(r.report.Warnings, fmt.Sprintf("disbursement %s REQUESTED since %s: money may be in flight; ask the vendor",
			d.ID, d.RequestedAt.UTC().Format(time.RFC3339)))
	}
	return nil
}

// warnLateResults names acquirer results that arrived for payments no
// longer pending (paid after expiry, say): money may have been taken from
// a payer for a payment the service will not settle.
func (r *reconciler) warnLateResults(tx *gorm.DB) error {
	var late []models.PaymentLateResult
	err := tx.Order("received_at DESC").Limit(20).Find(&late).Error
	if err != nil {
		return err
	}
	for _, l := range late {
		r.report.Warnings = append(r.report.Warnings, fmt.Sprintf("payment %s: the acquirer (%s) reported %s at %s while it was %s; not applied",
			l.PaymentID, l.Source, l.ReportedStatus, l.ReceivedAt.UTC().Format(time.RFC3339), l.PaymentStatus))
	}
	return nil
}

// warnHeldPayments names payments the acquirer reported paid with an
// amount other than the price: the result was not applied, so a payer's
// money may be at the acquirer for a payment the service will not settle.
func (r *reconciler) warnHeldPayments(tx *gorm.DB) error {
	var held []struct {
		ID         string
		Status     string
		HoldReason string
	}
	err := tx.Model(&models.Payment{}).Select("id, status, hold_reason").
		Where("hold_reason IS NOT NULL").Order("updated_at DESC").Limit(100).Scan(&held).Error
	if err != nil {
		return err
	}
	for _, p := range held {
		r.report.Warnings = append(r.report.Warnings, fmt.Sprintf("payment %s (%s) held: %s; not applied, not settled", p.ID, p.Status, p.HoldReason))
	}
	return nil
}
