package payouts

import (
	"context"
	"testing"
	"time"

	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors"
	"github.com/payoutd/payoutd/vendors/sandbox"
)

// A client whose settings refund the fee on a return gets the whole gross
// back; the return says so (refunded_fee) and reconcile stays clean. A
// vendor reporting RETURNED for a payout still REQUESTED paid it and had it
// returned: both steps are recorded, the payment and the return.
func TestReturnRefundsTheFeeWhenTheClientSaysSo(t *testing.T) {
	t.Parallel()
	f := newFixture(t, models.Rupiah(1_000_000))
	if err := f.db.Model(&models.Client{}).Where("id = ?", f.client.ID).Update("refund_fee_on_return", true).Error; err != nil {
		t.Fatal(err)
	}
	d := f.stored(models.StatusReturned, models.Rupiah(100_000))
	if w := f.walletNow(); w.Balance != models.Rupiah(1_000_000) || w.Locked != 0 || d.RefundedFee != models.DefaultBIFASTFee {
		t.Fatalf("wallet %s locked %s, refunded fee %s; want the whole gross back", w.Balance, w.Locked, d.RefundedFee)
	}
	f.reconciled()

	svc := New(Options{DB: f.db, Vendors: vendors.NewRegistry(sandbox.NewSimBank(sandbox.Options{}))})
	open := f.stored(models.StatusRequested, models.Rupiah(200_000))
	if err := svc.applyResult(context.Background(), open, vendors.PayoutResult{Reference: open.VendorReference, Status: vendors.PayoutReturned, FailureReason: "account closed"}); err != nil {
		t.Fatal(err)
	}
	if open.Status != models.StatusReturned || f.count("disbursement_transitions", "disbursement_id = ? AND to_status IN ?", open.ID, []string{"SUCCESS", "RETURNED"}) != 2 {
		t.Fatalf("REQUESTED reported RETURNED: now %s", open.Status)
	}
	var events []string
	f.db.Model(&models.WebhookEvent{}).Where("subject_id = ?", open.ID).Order("sequence").Pluck("event", &events)
	if len(events) != 2 || events[0] != "disbursement.success" || events[1] != "disbursement.returned" {
		t.Fatalf("events %v", events)
	}
	if w := f.walletNow(); w.Balance != models.Rupiah(1_000_000) || w.Locked != 0 {
		t.Fatalf("wallet %s locked %s after both returns (fees refunded)", w.Balance, w.Locked)
	}
	f.reconciled()
}

// statusVendor is simbank whose Status says what the test sets.
type statusVendor struct {
	vendors.Vendor
	result vendors.PayoutResult
}

func (v *statusVendor) Status(context.Context, string) (vendors.PayoutResult, error) {
	return v.result, nil
}

// A poll-only vendor's paid payout is watched for a return: asked a minute
// after it was paid, then as long again each time, for the watch; the
// sandbox's 1000000008 is returned and moved to RETURNED by such a check.
// A result contradicting the final status (FAILED after SUCCESS) is
// recorded once, counted on repeats, and changes nothing; a result equal
// to the stored status records nothing; the watch ends after ReturnWatch.
func TestReturnWatchOfAPollOnlyVendor(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, models.Rupiah(1_000_000))
	now := models.Now() // a submit's deadline is set on this clock: it must be near the real one
	clock := func() time.Time { return now }
	simbank := sandbox.NewSimBank(sandbox.Options{CompleteAfter: time.Second, Now: clock})
	queue := &pollRecorder{}
	svc := New(Options{DB: f.db, Vendors: vendors.NewRegistry(simbank), Queue: queue, Now: clock, ReturnWatch: 72 * time.Hour})
	payout := func(account string) *models.Disbursement {
		d := f.stored(models.StatusVerified, models.Rupiah(100_000))
		if err := f.db.Model(&models.Disbursement{}).Where("id = ?", d.ID).Update("account_no", account).Error; err != nil {
			t.Fatal(err)
		}
		if err := svc.Submit(ctx, d.ID); err != nil {
			t.Fatal(err)
		}
		return d
	}
	get := func(d *models.Disbursement) *models.Disbursement {
		got, err := svc.Get(ctx, d.ID)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	returned, ordinary := payout(sandbox.AccountReturnedLater), payout("1234567890")
	now = now.Add(time.Second)
	for _, d := range []*models.Disbursement{returned, ordinary} {
		if err := svc.Poll(ctx, d.ID); err != nil {
			t.Fatal(err)
		}
		if got := get(d); got.Status != models.StatusSuccess || got.NextCheckAt == nil || !got.NextCheckAt.Equal(now.Add(time.Minute)) {
			t.Fatalf("paid: %s, next check %v; want SUCCESS watched from a minute on", got.Status, got.NextCheckAt)
		}
	}
	now = now.Add(2 * time.Second) // the bank returned 1000000008 meanwhile
	if report, err := sweepDue(ctx, svc); err != nil || report.ReturnChecks != 0 {
		t.Fatalf("sweep before the first return check: %+v, %v", report, err)
	}
	now = now.Add(time.Minute)
	if report, err := sweepDue(ctx, svc); err != nil || report.ReturnChecks != 2 {
		t.Fatalf("sweep at the first return check: %+v, %v", report, err)
	}
	for _, d := range []*models.Disbursement{returned, ordinary} {
		if err := svc.Poll(ctx, d.ID); err != nil {
			t.Fatal(err)
		}
	}
	if got := get(returned); got.Status != models.StatusReturned || got.ReturnedAt == nil || got.NextCheckAt != nil ||
		got.FailedReason == nil || *got.FailedReason != sandbox.ReturnReason {
		t.Fatalf("1000000008 after its return check: %+v", got)
	}
	got := get(ordinary)
	if got.Status != models.StatusSuccess || got.NextCheckAt == nil || !got.NextCheckAt.Equal(now.Add(now.Sub(*got.CompletedAt))) {
		t.Fatalf("ordinary payout after a return check: %s next %v (paid %v)", got.Status, got.NextCheckAt, got.CompletedAt)
	}
	// One returned (net back, fee kept), one paid.
	if w := f.walletNow(); w.Balance != models.Rupiah(1_000_000-2_500-100_000) || w.Locked != 0 {
		t.Fatalf("wallet %s locked %s", w.Balance, w.Locked)
	}
	f.reconciled()

	// The vendor now says the paid one failed: recorded, counted, not applied.
	contrary := &statusVendor{Vendor: simbank, result: vendors.PayoutResult{Reference: ordinary.VendorReference, Status: vendors.PayoutFailed, FailureReason: "reversed"}}
	svc2 := New(Options{DB: f.db, Vendors: vendors.NewRegistry(contrary), Queue: queue, Now: clock, ReturnWatch: 72 * time.Hour})
	for range 2 {
		if err := svc2.Poll(ctx, ordinary.ID); err != nil {
			t.Fatal(err)
		}
	}
	var late []models.DisbursementLateResult
	f.db.Find(&late)
	if len(late) != 1 || late[0].SeenCount != 2 || late[0].Source != models.SourcePoll || late[0].StoredStatus != models.StatusSuccess ||
		late[0].ReportedStatus != "FAILED" || late[0].Reason != "reversed" || late[0].DisbursementID != ordinary.ID {
		t.Fatalf("late results %+v", late)
	}
	if got := get(ordinary); got.Status != models.StatusSuccess {
		t.Fatalf("a contradicting poll moved the payout to %s", got.Status)
	}
	if w := f.walletNow(); w.Balance != models.Rupiah(1_000_000-2_500-100_000) {
		t.Fatalf("a contradicting poll changed the balance: %s", w.Balance)
	}
	// Equal to what is stored: nothing recorded.
	contrary.result = vendors.PayoutResult{Reference: returned.VendorReference, Status: vendors.PayoutReturned}
	if err := svc2.applyResult(ctx, get(returned), contrary.result); err != nil {
		t.Fatal(err)
	}
	if n := f.count("disbursement_late_results", "disbursement_id = ?", returned.ID); n != 0 {
		t.Fatalf("a repeated RETURNED recorded %d late results", n)
	}

	// The watch ends ReturnWatch after the payout was paid.
	now = got.CompletedAt.Add(72*time.Hour + time.Second)
	contrary.result = vendors.PayoutResult{Reference: ordinary.VendorReference, Status: vendors.PayoutSuccess}
	if err := svc2.Poll(ctx, ordinary.ID); err != nil {
		t.Fatal(err)
	}
	if got := get(ordinary); got.NextCheckAt != nil {
		t.Fatalf("still watched after the watch: next %v", got.NextCheckAt)
	}
}

// sweepDue is the sweep's part here (dispatch runs the rest): it claims
// every due row, as the sweep does before it enqueues the row's next step,
// and counts them as the sweep's report would.
func sweepDue(ctx context.Context, svc *Service) (SweepReport, error) {
	var report SweepReport
	now, due, err := svc.DueRows(ctx)
	if err != nil {
		return report, err
	}
	for _, row := range due {
		claimed, err := svc.ClaimDueRow(ctx, row, now)
		switch {
		case err != nil:
			report.Unhandled++
		case !claimed:
		case row.Status == models.StatusVerified:
			report.Submits++
		case row.Status == models.StatusSuccess:
			report.ReturnChecks++
		default:
			report.Polls++
		}
	}
	return report, nil
}
