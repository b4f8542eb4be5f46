package payouts

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors"
	"github.com/payoutd/payoutd/vendors/sandbox"
	"github.com/payoutd/payoutd/vendors/snap"
	"github.com/payoutd/payoutd/vendors/snap/snapsim"
)

var (
	snapKeyOnce sync.Once
	snapKey     *rsa.PrivateKey
)

// snapReturnRail is a SNAP bank (snapsim, bca) that sends no notification
// and the adapter to it, on the test's clock, configured with or without
// notifications; the fixture's wallet is moved to it.
func snapReturnRail(t *testing.T, f *fixture, clock func() time.Time, notifications bool) vendors.Vendor {
	t.Helper()
	snapKeyOnce.Do(func() {
		var err error
		if snapKey, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
			panic(err)
		}
	})
	bank := snapsim.New(snapsim.Options{PartnerPublicKey: &snapKey.PublicKey, ClientKey: "ck", ClientSecret: "cs", PartnerID: "P",
		SourceAccountNo: "8880001111", Now: clock, CompleteAfter: time.Second})
	srv := httptest.NewServer(bank)
	t.Cleanup(srv.Close)
	o := snap.Options{Bank: "bca", BaseURL: srv.URL, PartnerID: "P", ClientKey: "ck", ClientSecret: "cs", ChannelID: "95221",
		SourceAccountNo: "8880001111", PrivateKey: snapKey, Now: clock, Notifications: notifications}
	if notifications {
		o.BankPublicKey = &snapKey.PublicKey
	}
	v, err := snap.New(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.db.Model(&models.Wallet{}).Where("id = ?", f.wallet.ID).Update("vendor", v.Name()).Error; err != nil {
		t.Fatal(err)
	}
	return v
}

// A SNAP bank configured without notifications tells a return (04
// Refunded, days after 00) only to its status inquiry: the paid payout is
// watched, the return check finds it, and the net comes back to the
// wallet once, the fee kept.
func TestSnapReturnLearntByStatusInquiryWithoutNotifications(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, models.Rupiah(1_000_000))
	now := models.Now() // a submit's deadline is set on this clock: it must be near the real one
	clock := func() time.Time { return now }
	v := snapReturnRail(t, f, clock, false)
	svc := New(Options{DB: f.db, Vendors: vendors.NewRegistry(v), Queue: &pollRecorder{}, Now: clock, ReturnWatch: 72 * time.Hour})
	d := snapPayout(t, f, svc, v.Name())

	now = now.Add(time.Second) // the bank says 00
	if err := svc.Poll(ctx, d.ID); err != nil {
		t.Fatal(err)
	}
	got, _ := svc.Get(ctx, d.ID)
	if got.Status != models.StatusSuccess || got.NextCheckAt == nil || !got.NextCheckAt.Equal(now.Add(time.Minute)) {
		t.Fatalf("paid: %s, next check %v; want SUCCESS watched from a minute on", got.Status, got.NextCheckAt)
	}
	paid := f.walletNow().Balance
	now = now.Add(2 * time.Second) // the bank refunded it meanwhile (04), and notified no one
	now = now.Add(time.Minute)
	if report, err := sweepDue(ctx, svc); err != nil || report.ReturnChecks != 1 {
		t.Fatalf("sweep at the first return check: %+v, %v", report, err)
	}
	for range 2 { // the return check, and one more: the return counts once
		if err := svc.Poll(ctx, d.ID); err != nil {
			t.Fatal(err)
		}
	}
	got, _ = svc.Get(ctx, d.ID)
	if got.Status != models.StatusReturned || got.ReturnedAt == nil || got.NextCheckAt != nil ||
		got.FailedReason == nil || *got.FailedReason != sandbox.ReturnReason {
		t.Fatalf("after the return check: %s returned %v next %v reason %v", got.Status, got.ReturnedAt, got.NextCheckAt, got.FailedReason)
	}
	if w := f.walletNow(); w.Balance != paid+d.NetAmount || w.Balance != models.Rupiah(1_000_000)-d.PlatformFee || w.Locked != 0 {
		t.Fatalf("wallet %s locked %s; want the net %s back once (%s), the fee kept", w.Balance, w.Locked, d.NetAmount, paid+d.NetAmount)
	}
	f.reconciled()
}

// With notifications on, the bank reports a return by notification: no
// status-inquiry watch is scheduled for the paid payout.
func TestSnapWithNotificationsIsNotWatched(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, models.Rupiah(1_000_000))
	now := models.Now() // a submit's deadline is set on this clock: it must be near the real one
	clock := func() time.Time { return now }
	v := snapReturnRail(t, f, clock, true)
	svc := New(Options{DB: f.db, Vendors: vendors.NewRegistry(v), Queue: &pollRecorder{}, Now: clock, ReturnWatch: 72 * time.Hour})
	d := snapPayout(t, f, svc, v.Name())
	now = now.Add(time.Second)
	if err := svc.Poll(ctx, d.ID); err != nil {
		t.Fatal(err)
	}
	if got, _ := svc.Get(ctx, d.ID); got.Status != models.StatusSuccess || got.NextCheckAt != nil {
		t.Fatalf("paid: %s, next check %v; want SUCCESS, not watched", got.Status, got.NextCheckAt)
	}
	now = now.Add(2*time.Second + time.Minute)
	if report, err := sweepDue(ctx, svc); err != nil || report.ReturnChecks != 0 {
		t.Fatalf("sweep: %+v, %v; want no return check", report, err)
	}
}

// snapPayout stores a VERIFIED payout of 100,000 on vendor to the
// sandbox's account that is paid, then returned, and submits it.
func snapPayout(t *testing.T, f *fixture, svc *Service, vendor string) *models.Disbursement {
	t.Helper()
	d := f.stored(models.StatusVerified, models.Rupiah(100_000))
	if err := f.db.Model(&models.Disbursement{}).Where("id = ?", d.ID).
		Updates(map[string]any{"vendor": vendor, "bank_code": "bri", "bank_name": "Bank Rakyat Indonesia", "account_no": sandbox.AccountReturnedLater}).Error; err != nil {
		t.Fatal(err)
	}
	if err := svc.Submit(context.Background(), d.ID); err != nil {
		t.Fatal(err)
	}
	if got, _ := svc.Get(context.Background(), d.ID); got.Status != models.StatusRequested {
		t.Fatalf("submitted: %s, want REQUESTED", got.Status)
	}
	return d
}
