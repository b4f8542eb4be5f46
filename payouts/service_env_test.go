package payouts

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/payoutd/payoutd/ledger"
	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors/sandbox"
)

// Lifecycle timings of svcEnv: a sandbox payout is final svcCompleteAfter
// after the vendor accepted it; a lock not submitted expires after
// svcLockTTL.
const (
	svcCompleteAfter = time.Minute
	svcLockTTL       = 30 * time.Minute
)

// svcEnv is the Service as the API and the worker use it, on a fixture's
// database: both sandbox vendors and the service on one clock the test
// moves, and no queue, so the test runs the worker's steps (Submit, Poll,
// ExpireLocks) itself and every outcome is deterministic.
type svcEnv struct {
	*fixture
	svc   *Service
	ctx   context.Context
	clock *svcClock
}

// svcClock is a clock that moves only when told to.
type svcClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *svcClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *svcClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// newSvcEnv is a client with a simbank wallet funded with funds (the
// fixture's) and the service.
func newSvcEnv(t *testing.T, funds models.Amount) *svcEnv {
	t.Helper()
	f := newFixture(t, funds)
	clock := &svcClock{now: models.Now()}
	vendors := sandbox.Registry(sandbox.Options{CompleteAfter: svcCompleteAfter, Now: clock.Now})
	svc := New(Options{DB: f.db, Vendors: vendors, LockTTL: svcLockTTL, Now: clock.Now})
	return &svcEnv{fixture: f, svc: svc, ctx: context.Background(), clock: clock}
}

// params are the compared parameters of an ordinary BIFAST payout of
// gross rupiah from the fixture's wallet to a bca account.
func (e *svcEnv) params(rupiah int64, account string) Params {
	return Params{WalletID: e.wallet.ID, Amount: models.Rupiah(rupiah), BankCode: "bca", AccountNo: account, TransferType: models.BIFAST}
}

// create is the fixture client's create.
func (e *svcEnv) create(key string, p Params) (*Created, error) {
	return e.svc.Create(e.ctx, e.client, CreateRequest{Params: p, IdempotencyKey: key})
}

// mustCreate is a create that must be fresh.
func (e *svcEnv) mustCreate(c *models.Client, req CreateRequest) *models.Disbursement {
	e.t.Helper()
	created, err := e.svc.Create(e.ctx, c, req)
	if err != nil {
		e.t.Fatalf("create %q: %v", req.IdempotencyKey, err)
	}
	if created.Replayed {
		e.t.Fatalf("create %q: a replay, want a fresh create", req.IdempotencyKey)
	}
	return created.Disbursement
}

// newClient is another merchant on the same database with the default
// fees and minimums, changed by adjust (may be nil).
func (e *svcEnv) newClient(adjust func(*models.Client)) *models.Client {
	e.t.Helper()
	now := models.Now()
	c := &models.Client{ID: models.NewID(), Name: "Other " + uuid.NewString()[:8], Kind: models.KindMerchant, Environment: models.Production,
		Withdrawals: models.WithdrawalsActive, PaymentFeeBps: models.DefaultPaymentFeeBps,
		BIFASTFee: models.DefaultBIFASTFee, RTOLFee: models.DefaultRTOLFee,
		BIFASTMinNet: models.DefaultBIFASTMinNet, RTOLMinNet: models.DefaultRTOLMinNet, CreatedAt: now, UpdatedAt: now}
	if adjust != nil {
		adjust(c)
	}
	cred := &models.Credential{ID: models.NewID(), APIKeyHash: uuid.NewString(), APIKeyPrefix: "v3_live_", CallbackSecretEnc: "x", CreatedAt: now}
	if err := models.NewStore(e.db).CreateClient(e.ctx, c, cred); err != nil {
		e.t.Fatal(err)
	}
	return c
}

// newWallet gives client an active wallet of vendor funded with funds.
func (e *svcEnv) newWallet(client *models.Client, vendor string, funds models.Amount) uuid.UUID {
	e.t.Helper()
	now := models.Now()
	w := &models.Wallet{ID: models.NewID(), ClientID: client.ID, Name: "W " + uuid.NewString()[:8], Vendor: vendor,
		State: models.WalletActive, CreatedAt: now, UpdatedAt: now}
	if err := models.NewStore(e.db).CreateWallet(e.ctx, w); err != nil {
		e.t.Fatal(err)
	}
	if funds != 0 {
		e.adjust(w.ID, funds)
	}
	return w.ID
}

// adjust is an operator's balance adjustment, through the ledger.
func (e *svcEnv) adjust(wallet uuid.UUID, amount models.Amount) {
	e.t.Helper()
	if _, err := ledger.Adjust(e.ctx, e.db, e.clock.Now(), wallet, amount, "test adjustment"); err != nil {
		e.t.Fatal(err)
	}
}

// submit runs the worker's payout:submit of id.
func (e *svcEnv) submit(id uuid.UUID) {
	e.t.Helper()
	if err := e.svc.Submit(e.ctx, id); err != nil {
		e.t.Fatalf("submit %s: %v", id, err)
	}
}

// poll runs the worker's payout:poll of id.
func (e *svcEnv) poll(id uuid.UUID) {
	e.t.Helper()
	if err := e.svc.Poll(e.ctx, id); err != nil {
		e.t.Fatalf("poll %s: %v", id, err)
	}
}

// expireLocks runs the worker's payout:expire and returns how many expired.
func (e *svcEnv) expireLocks() int {
	e.t.Helper()
	report, err := e.svc.ExpireLocks(e.ctx)
	if err != nil || report.Unhandled != 0 {
		e.t.Fatalf("expire locks: %+v, %v", report, err)
	}
	return report.Expired
}

// wantStatus fails unless id is stored in status.
func (e *svcEnv) wantStatus(id uuid.UUID, status models.DisbursementStatus) {
	e.t.Helper()
	if got := e.statusOf(id); got != status {
		e.t.Fatalf("disbursement %s is %s, want %s", id, got, status)
	}
}

// inStatus brings a new disbursement of the fixture's client, with key,
// to status through the service's own moves (create, approve, cancel,
// submit, poll, expire), and returns it with the request that created it.
// It moves the clock for EXPIRED, SUCCESS and RETURNED.
func (e *svcEnv) inStatus(status models.DisbursementStatus, key string) (*models.Disbursement, CreateRequest) {
	e.t.Helper()
	memo, ref := "first memo", "inv-1"
	account := map[models.DisbursementStatus]string{
		models.StatusRequested: sandbox.AccountStaysRequested,
		models.StatusFailed:    sandbox.AccountSubmitRejected,
		models.StatusReturned:  sandbox.AccountReturnedLater,
	}[status]
	if account == "" {
		account = "1234567890"
	}
	req := CreateRequest{Params: e.params(100_000, account), IdempotencyKey: key, Memo: &memo, ReferenceID: &ref}
	client := e.client
	if status == models.StatusPendingVerification {
		reviewed := *e.client
		reviewed.ReviewThreshold = &req.Amount
		client = &reviewed
	}
	d := e.mustCreate(client, req)
	switch status {
	case models.StatusCancelled:
		if _, err := e.svc.Cancel(e.ctx, d.ID, "test"); err != nil {
			e.t.Fatal(err)
		}
	case models.StatusExpired:
		e.clock.Advance(svcLockTTL)
		if n := e.expireLocks(); n != 1 {
			e.t.Fatalf("%d expired, want 1", n)
		}
	case models.StatusRequested, models.StatusFailed:
		e.submit(d.ID)
	case models.StatusSuccess, models.StatusReturned:
		e.submit(d.ID)
		e.clock.Advance(svcCompleteAfter)
		e.poll(d.ID) // paid
		if status == models.StatusReturned {
			e.clock.Advance(svcCompleteAfter)
			e.poll(d.ID) // the return watch's check finds it returned
		}
	}
	e.wantStatus(d.ID, status)
	stored, err := e.svc.Get(e.ctx, d.ID)
	if err != nil {
		e.t.Fatal(err)
	}
	return stored, req
}

// svcState is what a request that must change nothing could change.
type svcState struct {
	Wallets []models.Wallet
	Rows    svcRows
}

// svcRows counts the rows of each table a disbursement writes to.
type svcRows struct {
	Disbursements      int64
	Transitions        int64
	LedgerTransactions int64
	LedgerEntries      int64
	WebhookEvents      int64
}

func (e *svcEnv) snapshot() svcState {
	e.t.Helper()
	var s svcState
	if err := e.db.Order("id").Find(&s.Wallets).Error; err != nil {
		e.t.Fatal(err)
	}
	s.Rows = svcRows{
		Disbursements:      e.count("disbursements", "1 = 1"),
		Transitions:        e.count("disbursement_transitions", "1 = 1"),
		LedgerTransactions: e.count("ledger_transactions", "1 = 1"),
		LedgerEntries:      e.count("ledger_entries", "1 = 1"),
		WebhookEvents:      e.count("webhook_events", "1 = 1"),
	}
	return s
}

// unchanged fails when anything of before changed: a balance, a lock, a
// stored row.
func (e *svcEnv) unchanged(what string, before svcState) {
	e.t.Helper()
	after := e.snapshot()
	if len(after.Wallets) != len(before.Wallets) {
		e.t.Fatalf("%s: %d wallets, were %d", what, len(after.Wallets), len(before.Wallets))
	}
	for i, w := range after.Wallets {
		if b := before.Wallets[i]; w.Balance != b.Balance || w.Locked != b.Locked {
			e.t.Errorf("%s: wallet %s balance %s locked %s, was balance %s locked %s", what, w.ID, w.Balance, w.Locked, b.Balance, b.Locked)
		}
	}
	if after.Rows != before.Rows {
		e.t.Errorf("%s: rows changed: %+v, were %+v", what, after.Rows, before.Rows)
	}
}
