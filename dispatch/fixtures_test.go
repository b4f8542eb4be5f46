package dispatch

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/payoutd/payoutd/internal/testenv"
	"github.com/payoutd/payoutd/ledger"
	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/payouts"
	"github.com/payoutd/payoutd/vendors"
	"github.com/payoutd/payoutd/vendors/sandbox"
)

// fixture is a client with one funded simbank wallet on a test database
// (payouts' test fixture, through the exported API).
type fixture struct {
	t      *testing.T
	db     *gorm.DB
	client *models.Client
	wallet *models.Wallet
}

func newFixture(t *testing.T, funds models.Amount) *fixture {
	t.Helper()
	db := testenv.DB(t)
	store := models.NewStore(db)
	now := models.Now()
	c := &models.Client{ID: models.NewID(), Name: "Toko", Kind: models.KindMerchant, Environment: models.Production,
		Withdrawals: models.WithdrawalsActive, PaymentFeeBps: models.DefaultPaymentFeeBps,
		BIFASTFee: models.DefaultBIFASTFee, RTOLFee: models.DefaultRTOLFee,
		BIFASTMinNet: models.DefaultBIFASTMinNet, RTOLMinNet: models.DefaultRTOLMinNet, CreatedAt: now, UpdatedAt: now}
	cred := &models.Credential{ID: models.NewID(), APIKeyHash: uuid.NewString(), APIKeyPrefix: "v3_live_", CallbackSecretEnc: "x", CreatedAt: now}
	if err := store.CreateClient(context.Background(), c, cred); err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, db: db, client: c}
	w := &models.Wallet{ID: models.NewID(), ClientID: c.ID, Name: "W " + uuid.NewString()[:8], Vendor: "simbank",
		State: models.WalletActive, CreatedAt: now, UpdatedAt: now}
	if err := store.CreateWallet(context.Background(), w); err != nil {
		t.Fatal(err)
	}
	if funds != 0 {
		if _, err := ledger.Adjust(context.Background(), db, models.Now(), w.ID, funds, "test funding"); err != nil {
			t.Fatal(err)
		}
	}
	f.wallet = w
	return f
}

// batchFixture is a fixture with a service and its dispatcher paying
// through a simbank that answers at once.
func batchFixture(t *testing.T) (*fixture, *payouts.Service, *Dispatcher, *sandbox.Vendor) {
	f := newFixture(t, models.Rupiah(10_000_000))
	simbank := sandbox.NewSimBank(sandbox.Options{CompleteAfter: time.Nanosecond})
	svc, x := New(payouts.Options{DB: f.db, Vendors: vendors.NewRegistry(simbank), SubmitLease: time.Minute}, Options{})
	return f, svc, x, simbank
}

// stored inserts an open disbursement (VERIFIED, PENDING_VERIFICATION or
// REQUESTED) of gross amount with its lock, as the create would have left
// it.
func (f *fixture) stored(status models.DisbursementStatus, amount models.Amount) *models.Disbursement {
	f.t.Helper()
	now := models.Now()
	id := models.NewID()
	fee := models.DefaultBIFASTFee
	d := &models.Disbursement{ID: id, ClientID: f.client.ID, WalletID: f.wallet.ID, IdempotencyKey: id.String(),
		Status: status, Amount: amount, PlatformFee: fee, NetAmount: amount - fee, Currency: "IDR",
		TransferType: models.BIFAST, BankCode: "bca", BankName: "Bank Central Asia", AccountNo: "1234567890",
		AccountHolderName: "SANDBOX 7890", Vendor: "simbank", VendorReference: models.VendorReferenceFor(id),
		LockExpiresAt: now.Add(time.Hour), CreatedAt: now, UpdatedAt: now}
	err := f.db.Transaction(func(tx *gorm.DB) error {
		if err := tx.Create(d).Error; err != nil {
			return err
		}
		ok, err := ledger.LockFunds(tx, f.wallet.ID, []ledger.Lock{{DisbursementID: d.ID, Amount: amount}}, d.CreatedAt)
		if err == nil && !ok {
			err = fmt.Errorf("fixture: wallet %s cannot lock %s", f.wallet.ID, amount)
		}
		return err
	})
	if err != nil {
		f.t.Fatal(err)
	}
	return d
}

// withAccount stores a VERIFIED disbursement to account.
func (f *fixture) withAccount(account string) *models.Disbursement {
	f.t.Helper()
	d := f.stored(models.StatusVerified, models.Rupiah(100_000))
	if err := f.db.Model(&models.Disbursement{}).Where("id = ?", d.ID).Update("account_no", account).Error; err != nil {
		f.t.Fatal(err)
	}
	d.AccountNo = account
	return d
}

// walletNow re-reads the fixture's wallet.
func (f *fixture) walletNow() models.Wallet {
	f.t.Helper()
	var w models.Wallet
	if err := f.db.Where("id = ?", f.wallet.ID).Take(&w).Error; err != nil {
		f.t.Fatal(err)
	}
	return w
}

func (f *fixture) statusOf(id uuid.UUID) models.DisbursementStatus {
	f.t.Helper()
	var d models.Disbursement
	if err := f.db.Where("id = ?", id).Take(&d).Error; err != nil {
		f.t.Fatal(err)
	}
	return d.Status
}

func (f *fixture) count(table string, where string, args ...any) int64 {
	f.t.Helper()
	var n int64
	if err := f.db.Table(table).Where(where, args...).Count(&n).Error; err != nil {
		f.t.Fatal(err)
	}
	return n
}

// reconciled fails the test when the ledger or the lock invariant is broken.
func (f *fixture) reconciled() {
	f.t.Helper()
	report, err := ledger.Reconcile(context.Background(), f.db, models.Now())
	if err != nil {
		f.t.Fatal(err)
	}
	if !report.OK {
		f.t.Fatalf("reconcile: %v", report.Problems)
	}
}
