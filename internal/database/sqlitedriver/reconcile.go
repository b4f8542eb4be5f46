package sqlitedriver

import (
	"database/sql"

	"gorm.io/gorm"

	"github.com/payoutd/payoutd/models"
)

// SnapshotTxOptions is nil: SQLite runs the reconciliation alone on its
// one connection.
func (Driver) SnapshotTxOptions() *sql.TxOptions { return nil }

// ReconcileQuery is the read's statement with args.
func (Driver) ReconcileQuery(tx *gorm.DB, read models.ReconcileRead, args ...any) *gorm.DB {
	return tx.Raw(reconcileSQL[read], args...)
}

// sum is an exact SUM of an integer column. SQLite's SUM fails with
// "integer overflow" past int64, so it adds the high and the low 32 bits
// of each value apart (neither sum can overflow before 2^31 rows) as
// "hi:lo", which the ledger's total combines exactly; a REAL among the
// values makes a sum that total refuses as impossible.
func sum(col string) string {
	return "(CAST(SUM(" + col + " / 4294967296) AS TEXT) || ':' || CAST(SUM(" + col + " % 4294967296) AS TEXT))"
}

// reconcileSQL are the reconciliation's reads (models.ReconcileRead).
// ReadUnbalancedTransactions' condition is a superset (hi and lo may
// cancel out), which the ledger narrows with the exact total.
var reconcileSQL = map[models.ReconcileRead]string{
	models.ReadUnbalancedTransactions: `SELECT transaction_id, ` + sum("amount") + ` AS total FROM ledger_entries
	        GROUP BY transaction_id HAVING SUM(amount / 4294967296) <> 0 OR SUM(amount % 4294967296) <> 0`,
	models.ReadWalletEntries: `SELECT w.id, w.balance, w.locked,
	        (SELECT ` + sum("e.amount") + ` FROM ledger_entries e WHERE e.account = 'wallet:' || w.id) AS entries
	        FROM wallets w ORDER BY w.id`,
	models.ReadAccountTotals: `SELECT account, ` + sum("amount") + ` AS total FROM ledger_entries
	        WHERE account LIKE ? GROUP BY account ORDER BY account`,
	models.ReadWalletLocks: `SELECT w.id, w.locked,
	        (SELECT ` + sum("d.amount") + ` FROM disbursements d WHERE d.wallet_id = w.id AND d.status IN ?) AS open
	        FROM wallets w ORDER BY w.id`,
	models.ReadPaidByVendor: `SELECT vendor, ` + sum("net_amount") + ` AS net, ` + sum("platform_fee") + ` AS fees
	        FROM disbursements WHERE status = ? GROUP BY vendor`,
	models.ReadFeesAndRefunds: `SELECT ` + sum("platform_fee") + `, ` + sum("refunded_fee") + ` FROM disbursements WHERE status = ?`,
	models.ReadFeeEntries: `SELECT ` + sum("e.amount") + ` FROM ledger_entries e JOIN ledger_transactions t ON t.id = e.transaction_id
	        WHERE e.account = ? AND t.kind = ?`,
	models.ReadSettledPayments: `SELECT ` + sum("amount") + `, ` + sum("platform_fee") + ` FROM payments WHERE settled_at IS NOT NULL`,
	models.ReadAccountTotal:    `SELECT ` + sum("amount") + ` FROM ledger_entries WHERE account = ?`,
}
