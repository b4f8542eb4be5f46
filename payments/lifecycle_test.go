package payments

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/payoutd/payoutd/internal/testenv"
	"github.com/payoutd/payoutd/ledger"
	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors"
	"github.com/payoutd/payoutd/vendors/sandboxacquirer"
)

// fixture is a client with a default wallet and the payment service on a
// test database, with a clock the test moves.
type fixture struct {
	t      *testing.T
	db     *gorm.DB
	svc    *Service
	client *models.Client
	wallet uuid.UUID
	now    time.Time
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{t: t, db: testenv.DB(t), now: time.Date(2026, 11, 26, 3, 0, 0, 0, time.UTC)} // Thursday 10:00 WIB
	store := models.NewStore(f.db)
	now := models.Now()
	f.client = &models.Client{ID: models.NewID(), Name: "Warung Maju", Kind: models.KindMerchant, Environment: models.Staging,
		PayoutWebhookURL: "", PaymentWebhookURL: "http://127.0.0.1:9/payments", Withdrawals: models.WithdrawalsActive,
		PaymentFeeBps: models.DefaultPaymentFeeBps, BIFASTFee: models.DefaultBIFASTFee, RTOLFee: models.DefaultRTOLFee,
		BIFASTMinNet: models.DefaultBIFASTMinNet, RTOLMinNet: models.DefaultRTOLMinNet, CreatedAt: now, UpdatedAt: now}
	cred := &models.Credential{ID: models.NewID(), APIKeyHash: uuid.NewString(), APIKeyPrefix: "v3_test_", CallbackSecretEnc: "x", CreatedAt: now}
	if err := store.CreateClient(context.Background(), f.client, cred); err != nil {
		t.Fatal(err)
	}
	w := &models.Wallet{ID: models.NewID(), ClientID: f.client.ID, Name: "Main", Vendor: "simbank", State: models.WalletActive, CreatedAt: now, UpdatedAt: now}
	if err := store.CreateWallet(context.Background(), w); err != nil {
		t.Fatal(err)
	}
	f.wallet = w.ID
	acq, err := sandboxacquirer.New(sandboxacquirer.Options{Secret: "s"})
	if err != nil {
		t.Fatal(err)
	}
	f.svc = New(Options{DB: f.db, Acquirer: acq, Now: func() time.Time { return f.now }})
	return f
}

func (f *fixture) create(price int64) *models.Payment {
	f.t.Helper()
	p, err := f.svc.Create(context.Background(), f.client, CreateRequest{Price: models.Rupiah(price), PayerID: "player-1",
		Flow: models.PaymentFlowEmbed, ExpiresIn: DefaultExpiresIn})
	if err != nil {
		f.t.Fatal(err)
	}
	return p.Payment
}

func (f *fixture) get(id uuid.UUID) *models.Payment {
	f.t.Helper()
	p, err := f.svc.Get(context.Background(), id)
	if err != nil {
		f.t.Fatal(err)
	}
	return p
}

func (f *fixture) balance() models.Amount {
	f.t.Helper()
	w, err := models.NewStore(f.db).FindWallet(context.Background(), f.wallet)
	if err != nil {
		f.t.Fatal(err)
	}
	return w.Balance
}

func (f *fixture) reconciled() {
	f.t.Helper()
	report, err := ledger.Reconcile(context.Background(), f.db, f.now)
	if err != nil {
		f.t.Fatal(err)
	}
	if !report.OK {
		f.t.Fatalf("reconcile: %v", report.Problems)
	}
}

// The table of moves, written out apart from the one in models.
func TestPaymentMovesTable(t *testing.T) {
	t.Parallel()
	for _, from := range models.PaymentStatuses {
		for _, to := range models.PaymentStatuses {
			want := from == models.PaymentPending && to != models.PaymentPending
			if got := from.CanMoveTo(to); got != want {
				t.Errorf("%s → %s allowed = %v, want %v", from, to, got, want)
			}
		}
	}
}

// Every allowed move through the one transition function, with what it
// records; every refused one writes nothing.
func TestPaymentTransitions(t *testing.T) {
	t.Parallel()
	for _, from := range models.PaymentStatuses {
		for _, to := range models.PaymentStatuses {
			t.Run(fmt.Sprintf("%s→%s", from, to), func(t *testing.T) {
				t.Parallel()
				f := newFixture(t)
				p := f.create(150_000)
				if from != models.PaymentPending {
					f.db.Model(&models.Payment{}).Where("id = ?", p.ID).Update("status", from)
					p.Status = from
				}
				err := f.db.Transaction(func(tx *gorm.DB) error {
					return f.svc.transition(tx, p, Move{To: to, PaidAt: f.now, RetrievalReferenceNo: "123456789012", FailedReason: "declined"}, f.now)
				})
				var events, audits int64
				f.db.Model(&models.WebhookEvent{}).Where("subject_id = ?", p.ID).Count(&events)
				f.db.Table("payment_transitions").Where("payment_id = ?", p.ID).Count(&audits)
				stored := f.get(p.ID)
				if !from.CanMoveTo(to) {
					if !errors.Is(err, models.ErrTransitionRefused) || stored.Status != from || events != 0 || audits != 0 {
						t.Fatalf("refused move: err %v, stored %s, %d events, %d audit lines", err, stored.Status, events, audits)
					}
					return
				}
				if err != nil || stored.Status != to || events != 1 || audits != 1 {
					t.Fatalf("move: err %v, stored %s, %d events, %d audit lines", err, stored.Status, events, audits)
				}
				var ev models.WebhookEvent
				f.db.Where("subject_id = ?", p.ID).Take(&ev)
				want := map[models.PaymentStatus]string{models.PaymentSuccess: "payment.success", models.PaymentExpired: "payment.expired", models.PaymentFailed: "payment.failed"}[to]
				if ev.Event != want || ev.Target != models.TargetPayment {
					t.Fatalf("event %s for %s, want %s to the payment URL", ev.Event, to, want)
				}
				if to == models.PaymentSuccess && (stored.PaidAt == nil || stored.SettleAt == nil || *stored.RetrievalReferenceNo != "123456789012") {
					t.Fatalf("SUCCESS without paid_at, settle_at or the RRN: %+v", stored)
				}
				if to == models.PaymentFailed && (stored.FailedReason == nil || *stored.FailedReason != "declined") {
					t.Fatalf("FAILED without its reason")
				}
			})
		}
	}
}

// Paid on Thursday: nothing in the wallet until Friday 00:00 in Jakarta;
// then the net is credited once, the fee to the platform.
func TestPaymentSettlesOnTheNextBusinessDay(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	p := f.create(150_000)
	if applied, err := f.svc.Simulate(context.Background(), p.ID, ResultSuccess); err != nil || applied != AppliedNow {
		t.Fatalf("simulate: %s %v", applied, err)
	}
	paid := f.get(p.ID)
	if want := time.Date(2026, 11, 26, 17, 0, 0, 0, time.UTC); !paid.SettleAt.Equal(want) { // Friday 00:00 WIB
		t.Fatalf("settles at %s, want %s", paid.SettleAt, want)
	}
	f.now = paid.SettleAt.Add(-time.Second)
	if _, err := f.svc.Sweep(context.Background()); err != nil {
		t.Fatal(err)
	}
	if f.balance() != 0 || f.get(p.ID).SettledAt != nil {
		t.Fatal("settled before its day")
	}
	f.now = paid.SettleAt.Add(time.Second)
	for i := 0; i < 2; i++ { // twice: a payment settles once
		if err := f.svc.Settle(context.Background(), p.ID); err != nil {
			t.Fatal(err)
		}
	}
	fee := models.Rupiah(1_050) // 0.7 % of 150,000
	if f.balance() != models.Rupiah(150_000)-fee || f.get(p.ID).SettledAt == nil {
		t.Fatalf("balance %s after settlement, want %s", f.balance(), models.Rupiah(150_000)-fee)
	}
	f.reconciled()
}

// Expiry happens at expired_at, not before; a payment result arriving
// after it is recorded for operators and changes nothing.
func TestPaymentExpiryAndLateResult(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	p := f.create(20_000)
	f.now = p.ExpiredAt.Add(-time.Second)
	var notDue *NotDueError
	if err := f.svc.Expire(context.Background(), p.ID); !errors.As(err, &notDue) || f.get(p.ID).Status != models.PaymentPending {
		t.Fatalf("Expire a second early: %v, status %s; want a NotDueError and PENDING", err, f.get(p.ID).Status)
	}
	f.now = p.ExpiredAt
	if report, err := f.svc.Sweep(context.Background()); err != nil || report.Expired != 1 {
		t.Fatalf("sweep %+v %v", report, err)
	}
	if f.get(p.ID).Status != models.PaymentExpired {
		t.Fatal("not expired at expired_at")
	}
	applied, err := f.svc.ApplyResult(context.Background(), vendors.AcquirerResult{PaymentID: p.ID, Status: ResultSuccess,
		RetrievalReferenceNo: "000000000042", PaidAt: f.now}, "sandboxpay")
	if err != nil || applied != RecordedLate {
		t.Fatalf("late result: %s %v", applied, err)
	}
	var late models.PaymentLateResult
	if err := f.db.Where("payment_id = ?", p.ID).Take(&late).Error; err != nil ||
		late.ReportedStatus != ResultSuccess || late.PaymentStatus != models.PaymentExpired || *late.RetrievalReferenceNo != "000000000042" {
		t.Fatalf("late result recorded as %+v (%v)", late, err)
	}
	if f.get(p.ID).Status != models.PaymentExpired || f.balance() != 0 {
		t.Fatal("a late result changed the payment or the wallet")
	}
	f.reconciled()
	report, _ := ledger.Reconcile(context.Background(), f.db, f.now)
	if len(report.Warnings) != 1 || !strings.Contains(report.Warnings[0], p.ID.String()) {
		t.Fatalf("operators are not told of the late result: %v", report.Warnings)
	}
}

// The same notification twice is acknowledged once applied.
func TestPaymentResultRepeated(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	p := f.create(20_000)
	r := vendors.AcquirerResult{PaymentID: p.ID, Status: ResultSuccess, RetrievalReferenceNo: "000000000007", PaidAt: f.now}
	for i, want := range []Applied{AppliedNow, AppliedAlready} {
		if applied, err := f.svc.ApplyResult(context.Background(), r, "sandboxpay"); err != nil || applied != want {
			t.Fatalf("notification %d: %s %v, want %s", i+1, applied, err, want)
		}
	}
	var late int64
	f.db.Model(&models.PaymentLateResult{}).Where("payment_id = ?", p.ID).Count(&late)
	if late != 0 {
		t.Fatal("a repeated notification was recorded as late")
	}
	if _, err := f.svc.ApplyResult(context.Background(), vendors.AcquirerResult{PaymentID: p.ID, Status: ResultFailed}, "sandboxpay"); err != nil {
		t.Fatal(err)
	}
	f.db.Model(&models.PaymentLateResult{}).Where("payment_id = ?", p.ID).Count(&late)
	if late != 1 || f.get(p.ID).Status != models.PaymentSuccess {
		t.Fatal("a contradicting result after SUCCESS must be recorded, not applied")
	}
}

// A client without a default wallet cannot take payments.
func TestPaymentNeedsADefaultWallet(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.db.Model(&models.Wallet{}).Where("id = ?", f.wallet).Update("is_default", false)
	_, err := f.svc.Create(context.Background(), f.client, CreateRequest{Price: models.Rupiah(20_000), PayerID: "p", Flow: "embed", ExpiresIn: time.Minute})
	if !errors.Is(err, models.ErrNoDefaultWallet) {
		t.Fatalf("create without a default wallet: %v", err)
	}
}
