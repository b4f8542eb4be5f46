package payments

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/payoutd/payoutd/ledger"
	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors"
)

// Audit point 6: the acquirer's paid_at cannot move the settlement. A time
// in the future is clamped to now (the service's clock), one before the
// payment existed to its created_at; settle_at follows from the clamped
// time (T+1 business day), and the raw value is kept for operators.
func TestAcquirerPaidAtIsClamped(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tt := range []struct {
		name     string
		reported func(f *fixture, created time.Time) time.Time
		want     func(f *fixture, created time.Time) time.Time
	}{
		{"far future", func(*fixture, time.Time) time.Time { return time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC) },
			func(f *fixture, _ time.Time) time.Time { return f.now }},
		{"before the payment existed", func(_ *fixture, c time.Time) time.Time { return c.Add(-72 * time.Hour) },
			func(_ *fixture, c time.Time) time.Time { return c }},
		{"within the window", func(_ *fixture, c time.Time) time.Time { return c.Add(time.Minute) },
			func(_ *fixture, c time.Time) time.Time { return c.Add(time.Minute) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			p := f.create(150_000)
			f.now = f.now.Add(2 * time.Minute)
			reported := tt.reported(f, p.CreatedAt)
			applied, err := f.svc.ApplyResult(ctx, vendors.AcquirerResult{PaymentID: p.ID, Status: ResultSuccess,
				RetrievalReferenceNo: "123456789012", PaidAt: reported, Amount: p.Amount}, "sandboxpay")
			if err != nil || applied != AppliedNow {
				t.Fatalf("apply: %s %v", applied, err)
			}
			got := f.get(p.ID)
			want := tt.want(f, p.CreatedAt)
			if got.PaidAt == nil || !got.PaidAt.Equal(want) {
				t.Fatalf("paid_at %v, want %s", got.PaidAt, want)
			}
			if wantSettle := f.svc.calendar.SettleAt(want); got.SettleAt == nil || !got.SettleAt.Equal(wantSettle) {
				t.Fatalf("settle_at %v, want %s", got.SettleAt, wantSettle)
			}
			if got.PaidAtReported == nil || !got.PaidAtReported.Equal(reported) {
				t.Fatalf("paid_at_reported %v, want %s", got.PaidAtReported, reported)
			}
		})
	}
}

// Audit point 6: a paid amount other than the price is never applied. The
// payment stays PENDING (the merchant is not told it was paid, so no goods
// go out for the wrong amount), the reported amount and why it is held are
// recorded, nothing settles, and reconcile names it for operators.
func TestAcquirerAmountMismatchIsHeld(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	p := f.create(150_000)
	applied, err := f.svc.ApplyResult(ctx, vendors.AcquirerResult{PaymentID: p.ID, Status: ResultSuccess,
		RetrievalReferenceNo: "123456789012", PaidAt: f.now, Amount: models.Rupiah(15_000)}, "sandboxpay")
	if err != nil || applied != RecordedHeld {
		t.Fatalf("apply: %s %v", applied, err)
	}
	got := f.get(p.ID)
	if got.Status != models.PaymentPending || got.PaidAt != nil || got.SettleAt != nil ||
		got.ReportedAmount == nil || *got.ReportedAmount != models.Rupiah(15_000) ||
		got.HoldReason == nil || !strings.Contains(*got.HoldReason, "15000") {
		t.Fatalf("held payment %+v", got)
	}
	var events int64
	f.db.Model(&models.WebhookEvent{}).Where("subject_id = ?", p.ID).Count(&events)
	if events != 0 {
		t.Fatalf("%d webhook events for a held result", events)
	}
	f.now = f.now.Add(5 * 24 * time.Hour)
	if _, err := f.svc.Sweep(ctx); err != nil || f.balance() != 0 {
		t.Fatalf("sweep %v, balance %s", err, f.balance())
	}
	report, err := ledger.Reconcile(ctx, f.db, f.now)
	if err != nil || !strings.Contains(strings.Join(report.Warnings, "\n"), p.ID.String()) {
		t.Fatalf("reconcile %+v %v", report, err)
	}
}

// Audit point 3: every item of the payment sweep is independent. Of three
// settlements due, the middle one would take its wallet past the maximum
// balance: it is refused and recorded, the two others settle, and the
// refused one leaves the due set until an operator acts.
func TestSweepSettlesAroundARefusedItem(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	full, last := f.addMerchant(), f.addMerchant()
	if _, err := ledger.Adjust(ctx, f.db, f.now, full.wallet, models.MaxBalance, "at the maximum"); err != nil {
		t.Fatal(err)
	}
	var ids [3]*models.Payment
	for i, m := range []merchantOf{{f.client, f.wallet}, full, last} {
		p, err := f.svc.Create(ctx, m.client, CreateRequest{Price: models.Rupiah(150_000), PayerID: "p", Flow: models.PaymentFlowEmbed, ExpiresIn: DefaultExpiresIn})
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = p.Payment
		if _, err := f.svc.Simulate(ctx, p.ID, ResultSuccess); err != nil {
			t.Fatal(err)
		}
		f.now = f.now.Add(time.Second)
	}
	f.now = f.now.Add(5 * 24 * time.Hour)
	report, err := f.svc.Sweep(ctx)
	if err != nil || report.Settled != 2 || report.Failed != 1 {
		t.Fatalf("sweep %+v %v", report, err)
	}
	for i, p := range ids {
		got := f.get(p.ID)
		if (i == 1) != (got.SettledAt == nil) || (i == 1) != (got.SettlementError != nil) {
			t.Fatalf("payment %d: settled_at %v, settlement_error %v", i, got.SettledAt, got.SettlementError)
		}
	}
	if again, err := f.svc.Sweep(ctx); err != nil || again != (SweepReport{}) {
		t.Fatalf("second sweep %+v %v", again, err)
	}
	// The payment:settle task of the refused one ends without a retry.
	if err := f.svc.Settle(ctx, ids[1].ID); err != nil {
		t.Fatalf("settle task of a refused settlement: %v", err)
	}
}

// Audit point 14: a settlement's ledger lines carry the service's clock.
func TestSettlementLedgerUsesTheServiceClock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	f.now = time.Date(2031, 3, 4, 5, 6, 7, 0, time.UTC) // Tuesday
	p := f.create(150_000)
	if _, err := f.svc.Simulate(ctx, p.ID, ResultSuccess); err != nil {
		t.Fatal(err)
	}
	f.now = f.now.Add(48 * time.Hour)
	if err := f.svc.Settle(ctx, p.ID); err != nil {
		t.Fatal(err)
	}
	var entries []models.LedgerEntry
	f.db.Find(&entries)
	if len(entries) != 3 {
		t.Fatalf("%d entries", len(entries))
	}
	for _, e := range entries {
		if !e.CreatedAt.Equal(f.now) {
			t.Fatalf("entry created_at %s, want the service's clock %s", e.CreatedAt, f.now)
		}
	}
}

// merchantOf is a client and its default wallet.
type merchantOf struct {
	client *models.Client
	wallet uuid.UUID
}

// addMerchant adds another client with a default wallet to f's database.
func (f *fixture) addMerchant() merchantOf {
	f.t.Helper()
	store := models.NewStore(f.db)
	c := *f.client
	c.ID = models.NewID()
	cred := &models.Credential{ID: models.NewID(), APIKeyHash: uuid.NewString(), APIKeyPrefix: "v3_test_", CallbackSecretEnc: "x", CreatedAt: f.now}
	if err := store.CreateClient(context.Background(), &c, cred); err != nil {
		f.t.Fatal(err)
	}
	w := &models.Wallet{ID: models.NewID(), ClientID: c.ID, Name: "Main", Vendor: "simbank", State: models.WalletActive, CreatedAt: f.now, UpdatedAt: f.now}
	if err := store.CreateWallet(context.Background(), w); err != nil {
		f.t.Fatal(err)
	}
	return merchantOf{&c, w.ID}
}
