package payouts

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/payoutd/payoutd/models"
)

// Every allowed move, applied to a stored disbursement: the status, the
// lock, the balance, the ledger and the audit trail change as the
// lifecycle says, and reconcile stays clean.
func TestTransitionAllowedMoves(t *testing.T) {
	t.Parallel()
	gross, fee := models.Rupiah(100_000), models.DefaultBIFASTFee
	for _, from := range models.DisbursementStatuses {
		for _, to := range models.DisbursementStatuses {
			if !from.CanMoveTo(to) {
				continue
			}
			t.Run(fmt.Sprintf("%s→%s", from, to), func(t *testing.T) {
				t.Parallel()
				f := newFixture(t, models.Rupiah(1_000_000))
				d := f.stored(from, gross)
				err := f.db.Transaction(func(tx *gorm.DB) error {
					return transition(tx, []*models.Disbursement{d}, []Move{{To: to, Reason: "test", FailedReason: "returned"}}, models.Now())
				})
				if err != nil {
					t.Fatalf("transition: %v", err)
				}
				if got := f.statusOf(d.ID); got != to || d.Status != to {
					t.Fatalf("stored %s, in memory %s; want %s", got, d.Status, to)
				}
				w := f.walletNow()
				wantLocked, wantBalance := gross, models.Rupiah(1_000_000)
				if to.Terminal() || from.Terminal() {
					wantLocked = 0
				}
				if to == models.StatusReturned {
					// Paid, then the net came back; the fee is kept by default.
					wantBalance -= fee
					if d.ReturnedAt == nil || d.FailedReason == nil || *d.FailedReason != "returned" || d.RefundedFee != 0 {
						t.Errorf("RETURNED with returned_at %v failed_reason %v refunded_fee %s", d.ReturnedAt, d.FailedReason, d.RefundedFee)
					}
					var clearing int64
					f.db.Table("ledger_entries").Where("account = ?", models.VendorClearingAccount("simbank")).Select("SUM(amount)").Scan(&clearing)
					if clearing != 0 {
						t.Errorf("vendor clearing holds %s after the return, want 0", models.Amount(clearing))
					}
				}
				if to == models.StatusSuccess {
					wantBalance -= gross
					if n := f.count("ledger_entries", "account IN ?", []string{models.VendorClearingAccount("simbank"), models.AccountPlatformFees}); n != 2 {
						t.Errorf("SUCCESS wrote %d clearing and fee entries, want 2", n)
					}
					var clearing int64
					f.db.Table("ledger_entries").Where("account = ?", models.VendorClearingAccount("simbank")).Select("SUM(amount)").Scan(&clearing)
					if models.Amount(clearing) != gross-fee {
						t.Errorf("vendor clearing got %s, want the net %s", models.Amount(clearing), gross-fee)
					}
				}
				if w.Locked != wantLocked || w.Balance != wantBalance {
					t.Errorf("wallet locked %s balance %s, want locked %s balance %s", w.Locked, w.Balance, wantLocked, wantBalance)
				}
				if to.Terminal() && d.CompletedAt == nil {
					t.Error("terminal move without completed_at")
				}
				if to == models.StatusRequested && d.RequestedAt == nil {
					t.Error("REQUESTED without requested_at")
				}
				if to == models.StatusFailed && (d.FailedReason == nil || *d.FailedReason != "returned") {
					t.Errorf("FAILED with failed_reason %v", d.FailedReason)
				}
				if n := f.count("disbursement_transitions", "disbursement_id = ? AND from_status = ? AND to_status = ?", d.ID, from, to); n != 1 {
					t.Errorf("%d audit lines for the move, want 1", n)
				}
				f.reconciled()
			})
		}
	}
}

// Every refused move is an error and writes nothing.
func TestTransitionRefusedMoves(t *testing.T) {
	t.Parallel()
	f := newFixture(t, models.Rupiah(10_000_000))
	for _, from := range models.DisbursementStatuses {
		for _, to := range models.DisbursementStatuses {
			if from.CanMoveTo(to) {
				continue
			}
			d := f.stored(from, models.Rupiah(50_000))
			before := f.walletNow()
			lines := f.count("disbursement_transitions", "disbursement_id = ?", d.ID)
			err := f.db.Transaction(func(tx *gorm.DB) error {
				return transition(tx, []*models.Disbursement{d}, []Move{{To: to}}, models.Now())
			})
			if !errors.Is(err, models.ErrTransitionRefused) {
				t.Errorf("%s → %s: error %v, want ErrTransitionRefused", from, to, err)
			}
			if got := f.statusOf(d.ID); got != from || d.Status != from {
				t.Errorf("%s → %s refused but stored %s, in memory %s", from, to, got, d.Status)
			}
			if after := f.walletNow(); after.Locked != before.Locked || after.Balance != before.Balance {
				t.Errorf("%s → %s refused but the wallet changed", from, to)
			}
			if n := f.count("disbursement_transitions", "disbursement_id = ?", d.ID); n != lines {
				t.Errorf("%s → %s refused but %d audit lines written", from, to, n-lines)
			}
		}
	}
}

// A row moved by someone else since it was read is not overwritten.
func TestTransitionStaleRowIsNotOverwritten(t *testing.T) {
	t.Parallel()
	f := newFixture(t, models.Rupiah(1_000_000))
	d := f.stored(models.StatusVerified, models.Rupiah(100_000))
	stale := *d
	if err := f.db.Transaction(func(tx *gorm.DB) error {
		return transition(tx, []*models.Disbursement{d}, []Move{{To: models.StatusRequested}}, models.Now())
	}); err != nil {
		t.Fatal(err)
	}
	err := f.db.Transaction(func(tx *gorm.DB) error {
		return transition(tx, []*models.Disbursement{&stale}, []Move{{To: models.StatusExpired}}, models.Now())
	})
	if !errors.Is(err, models.ErrStaleStatus) {
		t.Fatalf("stale move: %v, want ErrStaleStatus", err)
	}
	if got := f.statusOf(d.ID); got != models.StatusRequested {
		t.Fatalf("status %s after a refused stale move, want REQUESTED", got)
	}
	if w := f.walletNow(); w.Locked != models.Rupiah(100_000) {
		t.Fatalf("lock %s after a refused stale move, want it held", w.Locked)
	}
}

// A path of moves is applied as one: VERIFIED → REQUESTED → SUCCESS
// leaves both audit lines in order, the request and completion times, the
// lock released and the gross debited; a path with a refused step writes
// nothing, not even its allowed first step.
func TestTransitionAlongAPath(t *testing.T) {
	t.Parallel()
	f := newFixture(t, models.Rupiah(1_000_000))
	d := f.stored(models.StatusVerified, models.Rupiah(100_000))
	err := f.db.Transaction(func(tx *gorm.DB) error {
		return transition(tx, []*models.Disbursement{d},
			[]Move{{To: models.StatusRequested, Reason: "accepted", NextCheckAt: models.Now().Add(time.Minute)}, {To: models.StatusSuccess, Reason: "paid"}}, models.Now())
	})
	if err != nil {
		t.Fatal(err)
	}
	var stored models.Disbursement
	if err := f.db.Where("id = ?", d.ID).Take(&stored).Error; err != nil {
		t.Fatal(err)
	}
	if stored.Status != models.StatusSuccess || stored.RequestedAt == nil || stored.CompletedAt == nil || stored.NextCheckAt != nil {
		t.Errorf("stored %s requested_at %v completed_at %v next_check_at %v", stored.Status, stored.RequestedAt, stored.CompletedAt, stored.NextCheckAt)
	}
	var trail []models.DisbursementTransition
	f.db.Where("disbursement_id = ?", d.ID).Order("id").Find(&trail)
	if len(trail) != 2 || trail[0].FromStatus != "VERIFIED" || trail[0].ToStatus != "REQUESTED" || trail[0].Reason != "accepted" ||
		trail[1].FromStatus != "REQUESTED" || trail[1].ToStatus != "SUCCESS" || trail[1].Reason != "paid" {
		t.Errorf("audit trail %+v", trail)
	}
	if w := f.walletNow(); w.Locked != 0 || w.Balance != models.Rupiah(900_000) {
		t.Errorf("wallet balance %s locked %s, want 900000 and 0", w.Balance, w.Locked)
	}
	f.reconciled()

	other := f.stored(models.StatusVerified, models.Rupiah(100_000))
	err = f.db.Transaction(func(tx *gorm.DB) error {
		return transition(tx, []*models.Disbursement{other}, []Move{{To: models.StatusRequested}, {To: models.StatusVerified}}, models.Now())
	})
	if !errors.Is(err, models.ErrTransitionRefused) {
		t.Fatalf("REQUESTED → VERIFIED in a path: %v, want ErrTransitionRefused", err)
	}
	if got := f.statusOf(other.ID); got != models.StatusVerified {
		t.Errorf("refused path left %s, want VERIFIED", got)
	}
	if n := f.count("disbursement_transitions", "disbursement_id = ? AND to_status = ?", other.ID, "REQUESTED"); n != 0 {
		t.Errorf("refused path wrote %d audit lines", n)
	}
}
