package ledger

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/payoutd/payoutd/database"
	"github.com/payoutd/payoutd/models"
)

// Report is the outcome of Reconcile. OK is false when any invariant fails;
// Problems says which, one line each.
type Report struct {
	OK             bool              `json:"ok"`
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

// Reconcile checks that
//   - every ledger transaction sums to zero, and so the whole ledger does;
//   - each wallet's balance equals the sum of its entries;
//   - each wallet's lock equals the gross of its non-terminal disbursements
//     (and so is never negative);
//   - each vendor's clearing account equals the net of its paid
//     disbursements (a returned one's net came back out of it), the payout
//     fees the fees of paid and returned disbursements, and the fees
//     refunded on returns the refunded fees;
//   - no vendor result contradicting a final disbursement is unresolved
//     (disbursement_late_results: money may be where the books say it
//     is not until an operator has looked);
//   - the acquirer clearing account equals minus the price of settled
//     payments, and the settlement fees their fees.
//
// It reads in one transaction so the figures are from one moment: on
// PostgreSQL a read-only REPEATABLE READ one, whose snapshot every statement
// shares (at READ COMMITTED a payout paid between two of its reads would be
// a false problem); SQLite runs it alone on its one connection.
func Reconcile(ctx context.Context, db *gorm.DB) (*Report, error) {
	report := &Report{SystemAccounts: map[string]string{}, Problems: []string{}, Warnings: []string{}}
	var opts []*sql.TxOptions
	if database.DialectOfDB(db) == database.Postgres {
		opts = append(opts, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
	}
	err := db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		for _, check := range []func(*gorm.DB, *Report) error{
			checkTransactions, checkWallets, checkLocks, checkPayoutAccounts, checkSettlements,
			checkLateVendorResults, warnStuckPayouts, warnUnsettled, warnLateResults, systemBalances,
		} {
			if err := check(tx, report); err != nil {
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

func checkTransactions(tx *gorm.DB, report *Report) error {
	var count int64
	if err := tx.Model(&models.LedgerTransaction{}).Count(&count).Error; err != nil {
		return err
	}
	report.Transactions = int(count)
	var unbalanced []struct {
		TransactionID string
		Total         int64
	}
	err := tx.Model(&models.LedgerEntry{}).
		Select("transaction_id, SUM(amount) AS total").
		Group("transaction_id").Having("SUM(amount) <> 0").
		Scan(&unbalanced).Error
	if err != nil {
		return err
	}
	for _, u := range unbalanced {
		report.Problems = append(report.Problems,
			fmt.Sprintf("ledger transaction %s does not balance: entries sum to %s", u.TransactionID, models.Amount(u.Total)))
	}
	var orphans int64
	err = tx.Model(&models.LedgerTransaction{}).
		Where("NOT EXISTS (SELECT 1 FROM ledger_entries e WHERE e.transaction_id = ledger_transactions.id)").
		Count(&orphans).Error
	if err != nil {
		return err
	}
	if orphans > 0 {
		report.Problems = append(report.Problems, fmt.Sprintf("%d ledger transactions have no entries", orphans))
	}
	return nil
}

func checkWallets(tx *gorm.DB, report *Report) error {
	var rows []struct {
		ID      string
		Balance int64
		Locked  int64
		Entries int64
	}
	err := tx.Raw(`SELECT w.id, w.balance, w.locked,
	        COALESCE((SELECT SUM(e.amount) FROM ledger_entries e WHERE e.account = 'wallet:' || w.id), 0) AS entries
	        FROM wallets w ORDER BY w.id`).Scan(&rows).Error
	if err != nil {
		return err
	}
	report.Wallets = len(rows)
	for _, r := range rows {
		if r.Balance != r.Entries {
			report.Problems = append(report.Problems, fmt.Sprintf(
				"wallet %s: balance %s differs from the sum of its ledger entries %s",
				r.ID, models.Amount(r.Balance).Fixed4(), models.Amount(r.Entries).Fixed4()))
		}
		if r.Locked < 0 {
			report.Problems = append(report.Problems, fmt.Sprintf("wallet %s: negative lock %s", r.ID, models.Amount(r.Locked).Fixed4()))
		}
	}
	return nil
}

func systemBalances(tx *gorm.DB, report *Report) error {
	var rows []struct {
		Account string
		Total   int64
	}
	err := tx.Model(&models.LedgerEntry{}).
		Select("account, SUM(amount) AS total").
		Where("account LIKE ?", "system:%").
		Group("account").Order("account").
		Scan(&rows).Error
	if err != nil {
		return err
	}
	for _, r := range rows {
		report.SystemAccounts[r.Account] = models.Amount(r.Total).Fixed4()
	}
	return nil
}

// openStatuses hold a lock.
var openStatuses = []models.DisbursementStatus{models.StatusPendingVerification, models.StatusVerified, models.StatusRequested}

func checkLocks(tx *gorm.DB, report *Report) error {
	var rows []struct {
		ID     string
		Locked int64
		Open   int64
	}
	err := tx.Raw(`SELECT w.id, w.locked,
	        COALESCE((SELECT SUM(d.amount) FROM disbursements d WHERE d.wallet_id = w.id AND d.status IN ?), 0) AS open
	        FROM wallets w ORDER BY w.id`, openStatuses).Scan(&rows).Error
	if err != nil {
		return err
	}
	for _, r := range rows {
		if r.Locked != r.Open {
			report.Problems = append(report.Problems, fmt.Sprintf(
				"wallet %s: locked %s differs from the gross of its open disbursements %s",
				r.ID, models.Amount(r.Locked).Fixed4(), models.Amount(r.Open).Fixed4()))
		}
	}
	return nil
}

// checkPayoutAccounts compares the vendor clearing accounts with the net of
// paid disbursements, and the fee account with their fees.
func checkPayoutAccounts(tx *gorm.DB, report *Report) error {
	var paid []struct {
		Vendor string
		Net    int64
		Fees   int64
	}
	err := tx.Model(&models.Disbursement{}).Select("vendor, SUM(net_amount) AS net, SUM(platform_fee) AS fees").
		Where("status = ?", models.StatusSuccess).Group("vendor").Scan(&paid).Error
	if err != nil {
		return err
	}
	// A returned payout keeps its payout posting (the fee stays unless
	// refunded by a return posting of its own).
	var returned struct {
		Fees     int64
		Refunded int64
	}
	err = tx.Model(&models.Disbursement{}).Select("COALESCE(SUM(platform_fee), 0) AS fees, COALESCE(SUM(refunded_fee), 0) AS refunded").
		Where("status = ?", models.StatusReturned).Scan(&returned).Error
	if err != nil {
		return err
	}
	feesPaid := returned.Fees
	expected := map[string]int64{}
	for _, p := range paid {
		expected[models.VendorClearingAccount(p.Vendor)] = p.Net
		feesPaid += p.Fees
	}
	var clearing []struct {
		Account string
		Total   int64
	}
	err = tx.Model(&models.LedgerEntry{}).Select("account, SUM(amount) AS total").
		Where("account LIKE ?", models.AccountVendorClearingPrefix+"%").Group("account").Scan(&clearing).Error
	if err != nil {
		return err
	}
	for _, c := range clearing {
		if _, ok := expected[c.Account]; !ok {
			expected[c.Account] = 0
		}
	}
	for account, want := range expected {
		var got int64
		for _, c := range clearing {
			if c.Account == account {
				got = c.Total
			}
		}
		if got != want {
			report.Problems = append(report.Problems, fmt.Sprintf("%s: %s differs from the net of paid disbursements %s",
				account, models.Amount(got).Fixed4(), models.Amount(want).Fixed4()))
		}
	}
	if err := compareFees(tx, report, "payout", feesPaid, "paid and returned disbursements"); err != nil {
		return err
	}
	return compareFees(tx, report, "return", -returned.Refunded, "refunds on returned disbursements")
}

// checkLateVendorResults names each unresolved vendor result that
// contradicted a final disbursement: a problem until an operator resolves
// it (payoutd admin disbursement resolve-late-result).
func checkLateVendorResults(tx *gorm.DB, report *Report) error {
	var open []models.DisbursementLateResult
	if err := tx.Where("resolved_at IS NULL").Order("id").Limit(100).Find(&open).Error; err != nil {
		return err
	}
	for _, r := range open {
		report.Problems = append(report.Problems, fmt.Sprintf(
			"disbursement %s: %s (%s) reported %s while it is %s (late result %d, %s, seen %d times since %s); not applied: check with the vendor, then payoutd admin disbursement resolve-late-result --id %d --note TEXT",
			r.DisbursementID, r.Vendor, r.VendorReference, r.ReportedStatus, r.StoredStatus, r.ID, r.Source, r.SeenCount,
			r.FirstSeenAt.UTC().Format(time.RFC3339), r.ID))
	}
	return nil
}

// compareFees compares the platform fee entries of one kind of posting
// with the fees they should add up to.
func compareFees(tx *gorm.DB, report *Report, kind string, want int64, of string) error {
	var got int64
	err := tx.Raw(`SELECT COALESCE(SUM(e.amount), 0) FROM ledger_entries e JOIN ledger_transactions t ON t.id = e.transaction_id
	        WHERE e.account = ? AND t.kind = ?`, models.AccountPlatformFees, kind).Scan(&got).Error
	if err != nil {
		return err
	}
	if got != want {
		report.Problems = append(report.Problems, fmt.Sprintf("%s: %s fees %s differ from the fees of %s %s",
			models.AccountPlatformFees, kind, models.Amount(got).Fixed4(), of, models.Amount(want).Fixed4()))
	}
	return nil
}

// checkSettlements compares the acquirer clearing account with the
// settled payments (each settlement takes its price from it) and the
// settlement fees with theirs.
func checkSettlements(tx *gorm.DB, report *Report) error {
	var settled struct {
		Amount int64
		Fees   int64
	}
	err := tx.Model(&models.Payment{}).Select("COALESCE(SUM(amount), 0) AS amount, COALESCE(SUM(platform_fee), 0) AS fees").
		Where("settled_at IS NOT NULL").Scan(&settled).Error
	if err != nil {
		return err
	}
	var clearing int64
	err = tx.Model(&models.LedgerEntry{}).Select("COALESCE(SUM(amount), 0)").Where("account = ?", models.AccountAcquirerClearing).Scan(&clearing).Error
	if err != nil {
		return err
	}
	if clearing != -settled.Amount {
		report.Problems = append(report.Problems, fmt.Sprintf("%s: %s differs from minus the price of settled payments %s",
			models.AccountAcquirerClearing, models.Amount(clearing).Fixed4(), models.Amount(-settled.Amount).Fixed4()))
	}
	return compareFees(tx, report, "settlement", settled.Fees, "settled payments")
}

// warnUnsettled names paid payments whose settlement is an hour overdue.
func warnUnsettled(tx *gorm.DB, report *Report) error {
	var late []struct {
		ID       string
		SettleAt time.Time
	}
	err := tx.Model(&models.Payment{}).Select("id, settle_at").
		Where("status = ? AND settled_at IS NULL AND settle_at < ?", models.PaymentSuccess, time.Now().Add(-time.Hour)).
		Order("settle_at").Limit(100).Scan(&late).Error
	if err != nil {
		return err
	}
	for _, p := range late {
		report.Warnings = append(report.Warnings, fmt.Sprintf("payment %s was due to settle at %s and has not",
			p.ID, p.SettleAt.UTC().Format(time.RFC3339)))
	}
	return nil
}

func warnStuckPayouts(tx *gorm.DB, report *Report) error {
	var stuck []struct {
		ID          string
		RequestedAt time.Time
	}
	err := tx.Model(&models.Disbursement{}).Select("id, requested_at").
		Where("status = ? AND requested_at < ?", models.StatusRequested, time.Now().Add(-StuckAfter)).
		Order("requested_at").Limit(100).Scan(&stuck).Error
	if err != nil {
		return err
	}
	for _, d := range stuck {
		report.Warnings = append(report.Warnings, fmt.Sprintf("disbursement %s REQUESTED since %s: money may be in flight; ask the vendor",
			d.ID, d.RequestedAt.UTC().Format(time.RFC3339)))
	}
	return nil
}

// warnLateResults names acquirer results that arrived for payments no
// longer pending (paid after expiry, say): money may have been taken from
// a payer for a payment the service will not settle.
func warnLateResults(tx *gorm.DB, report *Report) error {
	var late []models.PaymentLateResult
	err := tx.Order("received_at DESC").Limit(20).Find(&late).Error
	if err != nil {
		return err
	}
	for _, r := range late {
		report.Warnings = append(report.Warnings, fmt.Sprintf("payment %s: the acquirer (%s) reported %s at %s while it was %s; not applied",
			r.PaymentID, r.Source, r.ReportedStatus, r.ReceivedAt.UTC().Format(time.RFC3339), r.PaymentStatus))
	}
	return nil
}
