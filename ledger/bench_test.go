package ledger_test

import (
	"context"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/payoutd/payoutd/internal/testenv"
	"github.com/payoutd/payoutd/ledger"
	"github.com/payoutd/payoutd/models"
)

// The money write paths of one busy wallet, one connection at a time: what
// a create (the lock, with its disbursement row) and a batch of paid
// payouts (debit, fee, lock released) cost PostgreSQL and the service, per
// operation. The load tool measures them under contention; these isolate
// the statements. Run with TEST_DATABASE_URL for PostgreSQL.

func benchDisbursement(w *models.Wallet, now time.Time) *models.Disbursement {
	id := models.NewID()
	amount := models.Rupiah(20_000)
	fee := models.DefaultBIFASTFee
	return &models.Disbursement{ID: id, ClientID: w.ClientID, WalletID: w.ID, IdempotencyKey: id.String(),
		Status: models.StatusVerified, Amount: amount, PlatformFee: fee, NetAmount: amount - fee, Currency: "IDR",
		TransferType: models.BIFAST, BankCode: "bca", BankName: "Bank Central Asia", AccountNo: "1234567890",
		AccountHolderName: "SANDBOX 7890", Vendor: "simbank", VendorReference: models.VendorReferenceFor(id),
		LockExpiresAt: now.Add(time.Hour), CreatedAt: now, UpdatedAt: now}
}

func benchWallet(b *testing.B) (*gorm.DB, *models.Wallet) {
	db := testenv.DB(b)
	w := newWallet(b, db)
	if _, err := ledger.Adjust(context.Background(), db, models.Now(), w.ID, models.Rupiah(10_000_000_000), "bench"); err != nil {
		b.Fatal(err)
	}
	return db, w
}

// BenchmarkCreateOnOneWallet: one create's write (OpenDisbursements of one
// disbursement), as the API's lone create runs it.
func BenchmarkCreateOnOneWallet(b *testing.B) {
	db, w := benchWallet(b)
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		d := benchDisbursement(w, models.Now())
		opened, err := ledger.OpenDisbursements(ctx, db, []*models.Disbursement{d})
		if err != nil || !opened[d.ID] {
			b.Fatal(err, opened)
		}
	}
}

// BenchmarkGroupOf8OnOneWallet: eight creates of one wallet in one write,
// as the grouped create runs them; per group.
func BenchmarkGroupOf8OnOneWallet(b *testing.B) {
	db, w := benchWallet(b)
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		now := models.Now()
		ds := make([]*models.Disbursement, 8)
		for i := range ds {
			ds[i] = benchDisbursement(w, now)
		}
		if _, err := ledger.OpenDisbursements(ctx, db, ds); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPay8OnOneWallet: eight paid payouts of one wallet recorded in
// one transaction (postings, the wallet's change and its lines), as the
// worker's batch does; per batch. The creates are made untimed.
func BenchmarkPay8OnOneWallet(b *testing.B) {
	db, w := benchWallet(b)
	ctx := context.Background()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		now := models.Now()
		ds := make([]*models.Disbursement, 8)
		for i := range ds {
			ds[i] = benchDisbursement(w, now)
		}
		if _, err := ledger.OpenDisbursements(ctx, db, ds); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		err := db.Transaction(func(tx *gorm.DB) error {
			ps, rs := payoutPostings(w, ds)
			_, err := ledger.PostAll(tx, models.Now(), ps, rs)
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

func payoutPostings(w *models.Wallet, ds []*models.Disbursement) ([]ledger.Posting, []ledger.Release) {
	ps, rs := make([]ledger.Posting, len(ds)), make([]ledger.Release, len(ds))
	for i, d := range ds {
		ps[i] = ledger.Posting{Kind: "payout", Memo: "disbursement bca BIFAST", Reference: d.ID.String(), Entries: []ledger.Entry{
			{Account: models.WalletAccount(w.ID), Amount: -d.NetAmount, Line: models.StatementPayoutDebited},
			{Account: models.VendorClearingAccount("simbank"), Amount: d.NetAmount},
			{Account: models.WalletAccount(w.ID), Amount: -d.PlatformFee, Line: models.StatementFee},
			{Account: models.AccountPlatformFees, Amount: d.PlatformFee}}}
		rs[i] = ledger.Release{WalletID: w.ID, Amount: d.Amount, DisbursementID: d.ID}
	}
	return ps, rs
}
