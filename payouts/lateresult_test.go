package payouts

import (
	"context"
	"testing"

	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors"
)

// A result for a payout already final: the same result changes nothing;
// a pending one (a submit's acceptance overtaken by the vendor's
// notification) is older news and changes nothing either; a final result
// that differs, or any result for a payout the vendor was never to have,
// is recorded for operators and applied to nothing.
func TestResultsForFinalPayouts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		stored   models.DisbursementStatus
		reported vendors.PayoutStatus
		recorded bool
	}{
		{models.StatusSuccess, vendors.PayoutSuccess, false},
		{models.StatusSuccess, vendors.PayoutPending, false},
		{models.StatusFailed, vendors.PayoutPending, false},
		{models.StatusReturned, vendors.PayoutPending, false},
		{models.StatusSuccess, vendors.PayoutFailed, true},
		{models.StatusFailed, vendors.PayoutSuccess, true},
		{models.StatusExpired, vendors.PayoutPending, true},
		{models.StatusExpired, vendors.PayoutSuccess, true},
		{models.StatusCancelled, vendors.PayoutPending, true},
	} {
		t.Run(string(tc.stored)+"/"+string(tc.reported), func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, models.Rupiah(1_000_000))
			svc := groupingService(t, f)
			d := f.stored(tc.stored, models.Rupiah(100_000))
			before := f.walletNow()
			err := svc.applyResult(context.Background(), d, vendors.PayoutResult{Reference: d.VendorReference, Status: tc.reported})
			if err != nil {
				t.Fatal(err)
			}
			want := int64(0)
			if tc.recorded {
				want = 1
			}
			if n := f.count("disbursement_late_results", "disbursement_id = ?", d.ID); n != want {
				t.Errorf("%d late results recorded, want %d", n, want)
			}
			if got := f.statusOf(d.ID); got != tc.stored {
				t.Errorf("status %s, want %s unchanged", got, tc.stored)
			}
			if w := f.walletNow(); w.Balance != before.Balance || w.Locked != before.Locked {
				t.Errorf("wallet moved: %s/%s → %s/%s", before.Balance, before.Locked, w.Balance, w.Locked)
			}
		})
	}
}
