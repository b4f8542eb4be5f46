package ledger_test

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/payoutd/payoutd/internal/database"
	"github.com/payoutd/payoutd/internal/testenv"
	"github.com/payoutd/payoutd/ledger"
	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/payouts"
	"github.com/payoutd/payoutd/vendors"
	"github.com/payoutd/payoutd/vendors/sandbox"
)

// payoutBook is a merchant with a funded simbank wallet and the payout
// service on a test database: the rows reconcile checks, written the way
// the service writes them.
type payoutBook struct {
	t      *testing.T
	db     *gorm.DB
	svc    *payouts.Service
	client *models.Client
	wallet uuid.UUID
}

func newPayoutBook(t *testing.T) *payoutBook {
	t.Helper()
	db := testenv.DB(t)
	ctx := context.Background()
	store := models.NewStore(db)
	now := models.Now()
	c := &models.Client{ID: models.NewID(), Name: "Toko", Kind: models.KindMerchant, Environment: models.Production,
		Withdrawals: models.WithdrawalsActive, PaymentFeeBps: models.DefaultPaymentFeeBps,
		BIFASTFee: models.DefaultBIFASTFee, RTOLFee: models.DefaultRTOLFee,
		BIFASTMinNet: models.DefaultBIFASTMinNet, RTOLMinNet: models.DefaultRTOLMinNet, CreatedAt: now, UpdatedAt: now}
	cred := &models.Credential{ID: models.NewID(), APIKeyHash: uuid.NewString(), APIKeyPrefix: "v3_live_", CallbackSecretEnc: "x", CreatedAt: now}
	if err := store.CreateClient(ctx, c, cred); err != nil {
		t.Fatal(err)
	}
	w := &models.Wallet{ID: models.NewID(), ClientID: c.ID, Name: "Main", Vendor: sandbox.SimBank, State: models.WalletActive, CreatedAt: now, UpdatedAt: now}
	if err := store.CreateWallet(ctx, w); err != nil {
		t.Fatal(err)
	}
	if _, err := ledger.Adjust(ctx, db, models.Now(), w.ID, models.Rupiah(1_000_000), "funding"); err != nil {
		t.Fatal(err)
	}
	// Ordinary payouts are final at their first submit.
	vendorsFor := sandbox.Registry(sandbox.Options{CompleteAfter: time.Nanosecond})
	return &payoutBook{t: t, db: db, client: c, wallet: w.ID, svc: payouts.New(payouts.Options{DB: db, Vendors: vendorsFor})}
}

// payout creates and submits a payout of 100,000 to account and returns
// it as stored.
func (b *payoutBook) payout(key, account string) *models.Disbursement {
	b.t.Helper()
	ctx := context.Background()
	created, err := b.svc.Create(ctx, b.client, payouts.CreateRequest{IdempotencyKey: key, Params: payouts.Params{
		WalletID: b.wallet, Amount: models.Rupiah(100_000), BankCode: "bca", AccountNo: account, TransferType: models.BIFAST}})
	if err != nil {
		b.t.Fatalf("create: %v", err)
	}
	if err := b.svc.Submit(ctx, created.Disbursement.ID); err != nil {
		b.t.Fatalf("submit: %v", err)
	}
	d, err := b.svc.Get(ctx, created.Disbursement.ID)
	if err != nil {
		b.t.Fatal(err)
	}
	return d
}

// paidAndInFlight leaves one payout SUCCESS and one REQUESTED: a lock of
// 100,000 and 97,500 in simbank's clearing account.
func (b *payoutBook) paidAndInFlight() (paid, inFlight *models.Disbursement) {
	b.t.Helper()
	paid = b.payout("paid", "1234567890")
	inFlight = b.payout("in-flight", sandbox.AccountStaysRequested)
	if paid.Status != models.StatusSuccess || inFlight.Status != models.StatusRequested {
		b.t.Fatalf("payouts are %s and %s, want SUCCESS and REQUESTED", paid.Status, inFlight.Status)
	}
	return paid, inFlight
}

func (b *payoutBook) reconcile() *ledger.Report {
	b.t.Helper()
	report, err := ledger.Reconcile(context.Background(), b.db, models.Now())
	if err != nil {
		b.t.Fatal(err)
	}
	return report
}

// wantProblem fails unless reconcile reports exactly one problem, which
// contains every part of want.
func (b *payoutBook) wantProblem(want ...string) {
	b.t.Helper()
	report := b.reconcile()
	if report.OK || len(report.Problems) != 1 {
		b.t.Fatalf("reconcile ok=%v problems %q, want exactly one problem", report.OK, report.Problems)
	}
	for _, w := range want {
		if !strings.Contains(report.Problems[0], w) {
			b.t.Fatalf("problem %q does not mention %q", report.Problems[0], w)
		}
	}
}

func (b *payoutBook) exec(sql string, args ...any) {
	b.t.Helper()
	if err := b.db.Exec(sql, args...).Error; err != nil {
		b.t.Fatalf("%s: %v", sql, err)
	}
}

// A wallet's lock must equal the gross of its open payouts: a lock raised
// or dropped outside a payout's transitions is reported, naming the wallet
// and both figures, and the report is not ok.
func TestReconcileReportsALockThatDiffersFromOpenPayouts(t *testing.T) {
	t.Parallel()
	// Each tampering changes the wallet's last statement line too, so that
	// only the lock invariant breaks.
	for name, tc := range map[string]struct {
		sql, statementSQL string
		want              []string
	}{
		"lock raised by one unit": {`UPDATE wallets SET locked = locked + 1 WHERE id = ?`,
			`UPDATE wallet_statement SET locked_after = locked_after + 1, locked_change = locked_change + 1`,
			[]string{"locked 100000.0001 differs from the gross of its open disbursements 100000.0000"}},
		"lock of an in-flight payout lost": {`UPDATE wallets SET locked = 0 WHERE id = ?`,
			`UPDATE wallet_statement SET locked_after = 0, locked_change = locked_change - locked_after`,
			[]string{"locked 0.0000 differs from the gross of its open disbursements 100000.0000"}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := newPayoutBook(t)
			b.paidAndInFlight()
			if r := b.reconcile(); !r.OK {
				t.Fatalf("before tampering: %v", r.Problems)
			}
			b.exec(tc.sql, b.wallet)
			b.exec(tc.statementSQL+` WHERE wallet_id = ? AND seq = (SELECT statement_seq FROM wallets WHERE id = ?)`, b.wallet, b.wallet)
			b.wantProblem(append(tc.want, "wallet "+b.wallet.String())...)
		})
	}
}

// A wallet's statement must be whole and agree with the wallet: a line
// whose figures do not follow from the line before, a missing line, or a
// wallet changed without its line is reported, naming the wallet.
func TestReconcileReportsABrokenStatement(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		sql  string
		want string
	}{
		"a line's balance after changed": {`UPDATE wallet_statement SET balance_after = balance_after + 1 WHERE wallet_id = ? AND seq = 2`,
			"statement line 2 does not follow from the line before"},
		"a line lost": {`DELETE FROM wallet_statement WHERE wallet_id = ? AND seq = 2`,
			"lines, numbered up to"},
		"the lock changed without a line": {`UPDATE wallets SET locked = locked + 1 WHERE id = ?`,
			"differ from its last statement line's"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := newPayoutBook(t)
			b.paidAndInFlight()
			if r := b.reconcile(); !r.OK {
				t.Fatalf("before tampering: %v", r.Problems)
			}
			b.exec(tc.sql, b.wallet)
			r := b.reconcile()
			if r.OK || !slices.ContainsFunc(r.Problems, func(p string) bool {
				return strings.Contains(p, tc.want) && strings.Contains(p, "wallet "+b.wallet.String())
			}) {
				t.Fatalf("reconcile ok=%v problems %q, want one naming the wallet and %q", r.OK, r.Problems, tc.want)
			}
		})
	}
}

// A vendor's clearing account must equal the net of its paid payouts. The
// ledger refuses to change an entry, so the tampering is a balanced posting
// no payout explains (every transaction still sums to zero): it is
// reported for the clearing account it touched, also for a vendor with no
// paid payout at all.
func TestReconcileReportsClearingThatNoPayoutExplains(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		account string
		want    []string
	}{
		"extra entry on a vendor with paid payouts": {models.VendorClearingAccount(sandbox.SimBank),
			[]string{"system:vendor_clearing:simbank: 97500.0001 differs from the net of paid disbursements 97500.0000"}},
		"entry on a vendor with none": {models.VendorClearingAccount(sandbox.SimWallet),
			[]string{"system:vendor_clearing:simwallet: 0.0001 differs from the net of paid disbursements 0.0000"}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := newPayoutBook(t)
			b.paidAndInFlight()
			if r := b.reconcile(); !r.OK {
				t.Fatalf("before tampering: %v", r.Problems)
			}
			err := b.db.Transaction(func(tx *gorm.DB) error {
				_, err := ledger.Post(tx, models.Now(), ledger.Posting{Kind: "tampered", Entries: []ledger.Entry{
					{Account: tc.account, Amount: 1}, {Account: models.AccountAdjustments, Amount: -1}}})
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			b.wantProblem(tc.want...)
		})
	}
}

// Reconcile reads one snapshot: a payout that turns SUCCESS while it runs
// (after it read the paid payouts, before it reads the clearing accounts)
// is a problem at no moment, and must not be reported as one. SQLite runs
// one connection, so nothing can commit in between there.
func TestReconcileIgnoresAPayoutPaidWhileItRuns(t *testing.T) {
	t.Parallel()
	b := newPayoutBook(t)
	if database.DialectOfDB(b.db) != database.Postgres {
		t.Skip("SQLite serialises the reconcile with every write; needs TEST_DATABASE_URL")
	}
	_, inFlight := b.paidAndInFlight()
	var fired atomic.Bool
	paidMeanwhile := false
	payInBetween := func(tx *gorm.DB) {
		// Once, and not for the payout's own reads below.
		if tx.Statement.Table != "disbursements" || !fired.CompareAndSwap(false, true) {
			return
		}
		// Another connection: the reconcile's transaction is still open.
		d, err := b.svc.CompleteSandbox(context.Background(), inFlight.ID, vendors.PayoutSuccess, "")
		if err != nil || d.Status != models.StatusSuccess {
			t.Errorf("complete while reconciling: %v %v", d, err)
			return
		}
		paidMeanwhile = true
	}
	if err := b.db.Callback().Row().After("gorm:row").Register("test:pay_in_between", payInBetween); err != nil {
		t.Fatal(err)
	}
	report := b.reconcile()
	if !paidMeanwhile {
		t.Fatal("no payout was paid while reconcile ran; the test proves nothing")
	}
	if !report.OK {
		t.Fatalf("reconcile reported a payout paid while it ran: %v", report.Problems)
	}
	if r := b.reconcile(); !r.OK || r.SystemAccounts[models.VendorClearingAccount(sandbox.SimBank)] != "195000.0000" {
		t.Fatalf("afterwards: ok=%v %v %v", r.OK, r.Problems, r.SystemAccounts)
	}
}
