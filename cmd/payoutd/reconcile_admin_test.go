package main

import (
	"fmt"
	"strings"
	"testing"

	"gorm.io/gorm"

	"github.com/payoutd/payoutd/internal/database"
	"github.com/payoutd/payoutd/ledger"
	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors/sandbox"
)

// `payoutd admin reconcile` exits 3 (an invariant failed) and names the
// problem when a wallet's lock no longer matches its open payouts, and when
// a vendor clearing account holds money no paid payout explains; before the
// tampering it exits 0.
func TestReconcileExitsNonZeroOnLockOrClearingTampering(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		tamper func(db *gorm.DB, wallet string) error
		want   string
	}{
		"lock": {func(db *gorm.DB, wallet string) error {
			return db.Exec(`UPDATE wallets SET locked = locked + 1 WHERE id = ?`, wallet).Error
		}, "differs from the gross of its open disbursements"},
		"clearing": {func(db *gorm.DB, _ string) error {
			return db.Transaction(func(tx *gorm.DB) error {
				_, err := ledger.Post(tx, models.Now(), ledger.Posting{Kind: "tampered", Entries: []ledger.Entry{
					{Account: models.VendorClearingAccount(sandbox.SimBank), Amount: 1},
					{Account: models.AccountAdjustments, Amount: -1}}})
				return err
			})
		}, "system:vendor_clearing:simbank: 0.0001 differs from the net of paid disbursements"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := newCLI(t)
			client, wallet := c.merchantWithFunds()
			createPayout(t, c.payoutsOn(), client, wallet, sandbox.AccountStaysRequested, "open") // holds a lock
			if r := c.run("reconcile"); r.code != 0 || r.json["ok"] != true {
				t.Fatalf("reconcile before tampering: exit %d, %s", r.code, r.stdout)
			}
			db, err := database.Open(c.env["DATABASE_URL"])
			if err != nil {
				t.Fatal(err)
			}
			if sqlDB, err := db.DB(); err == nil {
				t.Cleanup(func() { sqlDB.Close() })
			}
			if err := tc.tamper(db, wallet); err != nil {
				t.Fatal(err)
			}
			r := c.run("reconcile")
			if r.code != 3 || r.json["ok"] != false {
				t.Fatalf("reconcile after tampering: exit %d, %s", r.code, r.stdout)
			}
			// A lock changed outside the ledger also breaks the wallet's
			// statement: the problem asked for must be among those named.
			problems, _ := r.json["problems"].([]any)
			if len(problems) == 0 || !strings.Contains(fmt.Sprint(problems...), tc.want) {
				t.Fatalf("problems %v, want one saying %q", problems, tc.want)
			}
		})
	}
}
