package payouts

import (
	"context"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/payoutd/payoutd/internal/groupcommit"
	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors"
)

// A group holds at most one plan per disbursement and at most
// maxMoveGroup; what is left waits in its order.
func TestNextMoveGroup(t *testing.T) {
	t.Parallel()
	d1, d2 := &models.Disbursement{ID: uuid.New()}, &models.Disbursement{ID: uuid.New()}
	queue := []*moveRequest{groupcommit.NewRequest(plan{d: d1}), groupcommit.NewRequest(plan{d: d2}), groupcommit.NewRequest(plan{d: d1})}
	group, rest := nextMoveGroup(queue)
	if len(group) != 2 || group[0] != queue[0] || group[1] != queue[1] || len(rest) != 1 || rest[0] != queue[2] {
		t.Fatalf("group %v, rest %v", group, rest)
	}
	var many []*moveRequest
	for i := 0; i < maxMoveGroup+3; i++ {
		many = append(many, groupcommit.NewRequest(plan{d: &models.Disbursement{ID: uuid.New()}}))
	}
	if group, rest = nextMoveGroup(many); len(group) != maxMoveGroup || len(rest) != 3 {
		t.Fatalf("group of %d, %d left", len(group), len(rest))
	}
}

// Results for many payouts of one wallet arrive at once, some of them
// twice (a status check and a callback): each payout moves exactly once,
// whichever group its result lands in; the wallet's balance and lock are
// exactly what the paid and the failed payouts make them, and the ledger
// reconciles.
func TestConcurrentResultsOnOneWallet(t *testing.T) {
	t.Parallel()
	const payouts = 90
	amount := models.Rupiah(100_000)
	funds := models.Rupiah(100_000_000)
	f := newFixture(t, funds)
	svc := groupingService(t, f)
	ds := make([]*models.Disbursement, payouts)
	for i := range ds {
		ds[i] = f.stored(models.StatusRequested, amount)
		ds[i].SubmitAttempts = 1
	}
	result := func(i int) vendors.PayoutResult {
		if i%3 == 0 {
			return vendors.PayoutResult{Reference: ds[i].VendorReference, Status: vendors.PayoutFailed, FailureReason: "rejected by the bank"}
		}
		return vendors.PayoutResult{Reference: ds[i].VendorReference, Status: vendors.PayoutSuccess}
	}
	var wg sync.WaitGroup
	for i := range ds {
		for copy := 0; copy < 1+i%2; copy++ { // every other result arrives twice
			wg.Add(1)
			go func() {
				defer wg.Done()
				d := *ds[i] // each caller holds its own read of the row
				if err := svc.applyResult(context.Background(), &d, result(i)); err != nil {
					t.Errorf("payout %d: %v", i, err)
				}
			}()
		}
	}
	wg.Wait()
	paid := models.Amount(0)
	for i, d := range ds {
		want := models.StatusSuccess
		if i%3 == 0 {
			want = models.StatusFailed
		} else {
			paid += amount
		}
		if got := f.statusOf(d.ID); got != want {
			t.Errorf("payout %d: %s, want %s", i, got, want)
		}
		if n := f.count("disbursement_transitions", "disbursement_id = ? AND to_status = ?", d.ID, want); n != 1 {
			t.Errorf("payout %d: %d transitions to %s, want 1", i, n, want)
		}
	}
	if w := f.walletNow(); w.Locked != 0 || w.Balance != funds-paid {
		t.Errorf("wallet: balance %s locked %s, want %s and 0", w.Balance, w.Locked, funds-paid)
	}
	f.reconciled()
}
