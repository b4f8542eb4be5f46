package sandbox_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors"
	"github.com/payoutd/payoutd/vendors/sandbox"
)

// SubmitBatch answers every payout as Submit would, one after the other,
// and leaves the store as those Submits would: every magic account
// number, every rejection, a repeated reference, a reference accepted
// before and another vendor's reference; payouts still pending and
// payouts already due; on both stores.
func TestSubmitBatchMatchesSubmit(t *testing.T) {
	t.Parallel()
	batch := []vendors.Payout{
		payout("ordinary", "1234567890"),
		payout("rejected", sandbox.AccountSubmitRejected),
		payout("fails-later", sandbox.AccountFailsLater),
		payout("stays-requested", sandbox.AccountStaysRequested),
		payout("answer-lost", sandbox.AccountFirstSubmitLost),
		{Reference: "over-cap", BankCode: "bca", AccountNo: "1234567890", TransferType: models.BIFAST, Amount: sandbox.BIFASTCap + 1},
		{Reference: "no-bank", BankCode: "nope", AccountNo: "1234567890", TransferType: models.BIFAST, Amount: models.Rupiah(97_500)},
		{Reference: "zero", BankCode: "bca", AccountNo: "1234567890", TransferType: models.BIFAST, Amount: 0},
		payout("seen-before", "1234567890"),
		payout("simwallets", "1234567890"),
		payout("ordinary", "1234567890"),
	}
	for _, completeAfter := range []time.Duration{time.Nanosecond, time.Hour} {
		for _, kind := range storeKinds {
			t.Run(fmt.Sprintf("%s-after-%s", kind.name, completeAfter), func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				vendorOn := func() (*sandbox.Vendor, sandbox.Store) {
					o := sandbox.Options{Store: kind.newStore(t), CompleteAfter: completeAfter}
					bank, wallet := sandbox.NewSimBank(o), sandbox.NewSimWallet(o)
					if _, err := bank.Submit(ctx, payout("seen-before", "1234567890")); err != nil {
						t.Fatal(err)
					}
					if _, err := wallet.Submit(ctx, payout("simwallets", "1234567890")); err != nil {
						t.Fatal(err)
					}
					return bank, o.Store
				}
				one, oneStore := vendorOn()
				many, manyStore := vendorOn()
				got := many.SubmitBatch(ctx, batch)
				for i, p := range batch {
					result, err := one.Submit(ctx, p)
					if got[i].Result != result || fmt.Sprint(got[i].Err) != fmt.Sprint(err) {
						t.Errorf("%s: batch %+v %v, Submit %+v %v", p.Reference, got[i].Result, got[i].Err, result, err)
					}
					for _, kind := range []error{vendors.ErrRejected, vendors.ErrUnavailable, sandbox.ErrAnswerLost, sandbox.ErrReferenceInUse} {
						if errors.Is(got[i].Err, kind) != errors.Is(err, kind) {
							t.Errorf("%s: batch error %v and Submit error %v differ on %v", p.Reference, got[i].Err, err, kind)
						}
					}
				}
				for _, p := range batch {
					a, errA := oneStore.Get(ctx, p.Reference)
					b, errB := manyStore.Get(ctx, p.Reference)
					if fmt.Sprint(errA) != fmt.Sprint(errB) || a.SubmitCalls != b.SubmitCalls || a.FinalStatus != b.FinalStatus ||
						a.FailureReason != b.FailureReason || a.AnswerLost != b.AnswerLost || a.Vendor != b.Vendor {
						t.Errorf("%s stored: after Submit %+v %v, after SubmitBatch %+v %v", p.Reference, a, errA, b, errB)
					}
				}
				if n, _ := many.SubmitCalls(ctx, "ordinary"); n != 2 {
					t.Errorf("a reference twice in one batch counted %d submits, want 2", n)
				}
			})
		}
	}
}
