package payouts

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
)

// fixture is a client with one funded simbank wallet on a test database.
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
	w := f.walletByID(f.addWallet(funds, models.WalletActive))
	f.wallet = &w
	return f
}

// addWallet gives the fixture's client another simbank wallet in state,
// funded with funds.
func (f *fixture) addWallet(funds models.Amount, state models.WalletState) uuid.UUID {
	f.t.Helper()
	now := models.Now()
	w := &models.Wallet{ID: models.NewID(), ClientID: f.client.ID, Name: "W " + uuid.NewString()[:8], Vendor: "simbank",
		State: state, CreatedAt: now, UpdatedAt: now}
	if err := models.NewStore(f.db).CreateWallet(context.Background(), w); err != nil {
		f.t.Fatal(err)
	}
	if funds != 0 {
		if _, err := ledger.Adjust(context.Background(), f.db, models.Now(), w.ID, funds, "test funding"); err != nil {
			f.t.Fatal(err)
		}
	}
	return w.ID
}

// newDisbursement is a disbursement of the fixture's client on wallet, in
// status, as a create would build it; it is not stored.
func (f *fixture) newDisbursement(wallet uuid.UUID, status models.DisbursementStatus, amount models.Amount) *models.Disbursement {
	now := models.Now()
	id := models.NewID()
	fee := models.DefaultBIFASTFee
	return &models.Disbursement{ID: id, ClientID: f.client.ID, WalletID: wallet, IdempotencyKey: id.String(),
		Status: status, Amount: amount, PlatformFee: fee, NetAmount: amount - fee, Currency: "IDR",
		TransferType: models.BIFAST, BankCode: "bca", BankName: "Bank Central Asia", AccountNo: "1234567890",
		AccountHolderName: "SANDBOX 7890", Vendor: "simbank", VendorReference: models.VendorReferenceFor(id),
		LockExpiresAt: now.Add(time.Hour), CreatedAt: now, UpdatedAt: now}
}

// stored inserts a disbursement of gross amount in status, with its lock
// when the status holds one, as the create would have left it. A paid or
// returned one gets there through transition, with its ledger postings.
func (f *fixture) stored(status models.DisbursementStatus, amount models.Amount) *models.Disbursement {
	f.t.Helper()
	if status == models.StatusSuccess || status == models.StatusReturned {
		d := f.stored(models.StatusRequested, amount)
		path := []Move{{To: models.StatusSuccess, Reason: "paid (fixture)"}}
		if status == models.StatusReturned {
			path = append(path, Move{To: models.StatusReturned, Reason: "returned (fixture)", FailedReason: "returned"})
		}
		if err := f.db.Transaction(func(tx *gorm.DB) error { return transition(tx, []*models.Disbursement{d}, path, models.Now()) }); err != nil {
			f.t.Fatal(err)
		}
		return d
	}
	d := f.newDisbursement(f.wallet.ID, status, amount)
	err := f.db.Transaction(func(tx *gorm.DB) error {
		if err := tx.Create(d).Error; err != nil {
			return err
		}
		if status.Terminal() {
			return nil
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

// walletNow re-reads the fixture's wallet.
func (f *fixture) walletNow() models.Wallet { return f.walletByID(f.wallet.ID) }

func (f *fixture) walletByID(id uuid.UUID) models.Wallet {
	f.t.Helper()
	var w models.Wallet
	if err := f.db.Where("id = ?", id).Take(&w).Error; err != nil {
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
