package payments_test

import (
	"context"
	"testing"
	"time"

	"github.com/payoutd/payoutd/internal/app"
	"github.com/payoutd/payoutd/internal/config"
	"github.com/payoutd/payoutd/internal/testenv"
	"github.com/payoutd/payoutd/ledger"
	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/payments"
)

func jakarta(s string) time.Time {
	t, err := time.ParseInLocation("Mon 2006-01-02 15:04", s, payments.Jakarta)
	if err != nil {
		panic(err)
	}
	return t
}

// The settlement calendar as configured (SETTLEMENT_HOLIDAYS, through
// config.Load, as the worker and the api read it), through the service and
// the database: a payment paid on a Friday in Jakarta reaches the wallet
// on Monday at 00:00 Jakarta time, not before; a configured holiday is
// skipped like a weekend, and without the setting it is a business day.
func TestSettlementCalendarFromConfiguration(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, holidays, paid, settles string
	}{
		{"Friday afternoon", "", "Fri 2026-11-27 16:30", "Mon 2026-11-30 00:00"},
		{"Friday a minute before midnight", "", "Fri 2026-11-27 23:59", "Mon 2026-11-30 00:00"},
		{"Friday morning, still Thursday in UTC", "", "Fri 2026-11-27 06:00", "Mon 2026-11-30 00:00"},
		{"Thursday before a configured Friday holiday", "2026-12-25, 2027-01-01", "Thu 2026-12-24 10:00", "Mon 2026-12-28 00:00"},
		{"Thursday before the same Friday, not configured", "2027-01-01", "Thu 2026-12-24 10:00", "Fri 2026-12-25 00:00"},
		{"Friday before a configured Monday holiday", "2026-11-30", "Fri 2026-11-27 09:00", "Tue 2026-12-01 00:00"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := config.Load(func(k string) string {
				return map[string]string{"SETTLEMENT_HOLIDAYS": tt.holidays}[k]
			}, config.Defaults())
			if err != nil {
				t.Fatal(err)
			}
			db := testenv.DB(t)
			m := newMerchant(t, db, "")
			now := jakarta(tt.paid)
			svc := payments.New(payments.Options{DB: db, Acquirer: newAcquirer(t), Calendar: app.SettlementCalendar(cfg),
				Now: func() time.Time { return now }})
			ctx := context.Background()
			p, err := svc.Create(ctx, m.client, payments.CreateRequest{Price: models.Rupiah(150_000), PayerID: "p", Flow: "embed", ExpiresIn: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := svc.Simulate(ctx, p.ID, payments.ResultSuccess); err != nil {
				t.Fatal(err)
			}
			want := jakarta(tt.settles)
			if got, _ := svc.Get(ctx, p.ID); got.SettleAt == nil || !got.SettleAt.Equal(want) {
				t.Fatalf("paid %s: settles at %v, want %s", tt.paid, got.SettleAt, tt.settles)
			}
			balance := func() models.Amount {
				w, err := models.NewStore(db).FindWallet(ctx, m.wallet)
				if err != nil {
					t.Fatal(err)
				}
				return w.Balance
			}
			now = want.Add(-time.Second)
			if report, err := svc.Sweep(ctx); err != nil || report.Settled != 0 || balance() != 0 {
				t.Fatalf("a second before %s: sweep %+v %v, balance %s", tt.settles, report, err, balance())
			}
			now = want
			if report, err := svc.Sweep(ctx); err != nil || report.Settled != 1 {
				t.Fatalf("at %s: sweep %+v %v", tt.settles, report, err)
			}
			settled, _ := svc.Get(ctx, p.ID)
			if settled.SettledAt == nil || !settled.SettledAt.Equal(want) || balance() != models.Rupiah(150_000-1_050) {
				t.Fatalf("at %s: settled_at %v, balance %s", tt.settles, settled.SettledAt, balance())
			}
			if report, err := ledger.Reconcile(ctx, db, now); err != nil || !report.OK {
				t.Fatalf("reconcile %+v %v", report, err)
			}
		})
	}
}
