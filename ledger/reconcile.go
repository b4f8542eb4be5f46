package ledger

import (
	"context"
	"fmt"

	"gorm.io/gorm"

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
}

// Reconcile checks that
//   - every ledger transaction sums to zero, and so the whole ledger does;
//   - each wallet's balance equals the sum of its entries;
//   - no wallet has a negative lock.
//
// It reads in one transaction so the figures are from one moment.
func Reconcile(ctx context.Context, db *gorm.DB) (*Report, error) {
	report := &Report{SystemAccounts: map[string]string{}, Problems: []string{}}
	err := db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := checkTransactions(tx, report); err != nil {
			return err
		}
		if err := checkWallets(tx, report); err != nil {
			return err
		}
		return systemBalances(tx, report)
	})
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
