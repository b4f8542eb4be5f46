package ledger_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/payoutd/payoutd/internal/testenv"
	"github.com/payoutd/payoutd/ledger"
	"github.com/payoutd/payoutd/models"
)

// A create's write that fails for a reason the caller does not expect (here
// a CHECK: gross ≠ fee + net) reaches the log like every other money
// statement, without its values. On PostgreSQL the write is one statement
// sent past gorm, which logged nothing of it.
func TestOpenDisbursementsFailureIsLogged(t *testing.T) {
	var out testenv.SyncBuffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewJSONHandler(&out, nil)))
	t.Cleanup(func() { slog.SetDefault(prev) })

	db := testenv.DB(t)
	w := newWallet(t, db)
	ctx := context.Background()
	if _, err := ledger.Adjust(ctx, db, models.Now(), w.ID, models.Rupiah(1_000_000), "funds"); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{1, 2} { // a lone create's statement and a group's
		var ds []*models.Disbursement
		for range n {
			d := benchDisbursement(w, models.Now())
			d.NetAmount = d.Amount // breaks amount = platform_fee + net_amount
			d.AccountNo = "9876543210777"
			ds = append(ds, d)
		}
		if _, err := ledger.OpenDisbursements(ctx, db, ds); err == nil {
			t.Fatalf("%d disbursement(s) whose fee and net do not add up were stored", n)
		}
		logged := out.String()
		if !strings.Contains(strings.ReplaceAll(logged, "`", ""), "INSERT INTO disbursements") { // SQLite's gorm quotes names
			t.Fatalf("%d disbursement(s): the failed write was not logged:\n%s", n, logged)
		}
		if strings.Contains(logged, "9876543210777") {
			t.Errorf("%d disbursement(s): an account number reached the log:\n%s", n, logged)
		}
	}
}
