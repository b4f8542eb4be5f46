package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/payoutd/payoutd/admin"
	"github.com/payoutd/payoutd/config"
	"github.com/payoutd/payoutd/database"
	"github.com/payoutd/payoutd/ledger"
	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/payouts"
	"github.com/payoutd/payoutd/tasks"
	"github.com/payoutd/payoutd/testenv"
	"github.com/payoutd/payoutd/vendors"
	"github.com/payoutd/payoutd/vendors/sandbox"
	"github.com/payoutd/payoutd/worker"
)

// payoutEnv is a merchant with funded wallets and the payout machinery:
// either an inline queue (submits run inside the create, polls wait for
// drain: deterministic) or a real asynq worker on the test's Redis.
type payoutEnv struct {
	*bundle
	m       merchant
	wallet  uuid.UUID // simbank, the default
	ewallet uuid.UUID // simwallet
	svc     *payouts.Service
	store   *sandbox.MemoryStore
	vendor  *countingStore // counts every payout the sandbox vendors accepted
	inline  *inlineQueue   // nil with a real worker
	clock   *testClock
}

type payoutSetup struct {
	worker        bool          // a real asynq worker in-process
	funds         string        // of each wallet; default 1,000,000; "none" leaves them empty
	submitWait    time.Duration // DISBURSEMENT_SUBMIT_WAIT; default 2 s
	lockTTL       time.Duration // default 30 minutes
	completeAfter time.Duration // sandbox; default 1 ns (final at once)
	withdrawals   models.WithdrawalState
	// noSubmit makes the inline queue record submits instead of running
	// them (a worker that has not picked them up yet): e.runSubmits runs
	// them. Pair it with a tiny submitWait.
	noSubmit bool
}

// testClock is the shared clock of server, service and sandbox vendors:
// real time plus an offset tests can advance.
type testClock struct {
	mu     sync.Mutex
	offset time.Duration
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.offset += d
	c.mu.Unlock()
}

func setupPayouts(t *testing.T, o payoutSetup) *payoutEnv {
	t.Helper()
	if o.funds == "" {
		o.funds = "1000000"
	}
	if o.submitWait == 0 {
		o.submitWait = 2 * time.Second
	}
	if o.lockTTL == 0 {
		o.lockTTL = 30 * time.Minute
	}
	if o.completeAfter == 0 {
		o.completeAfter = time.Nanosecond
	}
	clock := &testClock{}
	store := sandbox.NewMemoryStore()
	counting := &countingStore{MemoryStore: store}
	registry := sandbox.Registry(sandbox.Options{Store: counting, CompleteAfter: o.completeAfter, Now: clock.Now})
	rdb, _ := testenv.Redis(t)
	db := testenv.DB(t)
	var queue Queue
	var inline *inlineQueue
	var svcQueue payouts.Queue
	if o.worker {
		opt, prefix := testenv.Queue(t, rdb)
		client := tasks.NewPrefixedClient(opt, prefix)
		t.Cleanup(func() { client.Close() })
		queue, svcQueue = client, client
		svc := payouts.New(payouts.Options{DB: db, Vendors: registry, Queue: client, LockTTL: o.lockTTL, SubmitLease: time.Second, Now: clock.Now})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			done <- worker.Run(ctx, worker.Deps{DB: db, Redis: opt, Payouts: svc, QueuePrefix: prefix, Concurrency: 8})
		}()
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("worker: %v", err)
			}
		})
	} else {
		inline = &inlineQueue{hold: o.noSubmit}
		queue, svcQueue = inline, inline
	}
	svc := payouts.New(payouts.Options{DB: db, Vendors: registry, Queue: svcQueue, LockTTL: o.lockTTL, SubmitLease: time.Second, Now: clock.Now})
	if inline != nil {
		inline.svc = svc
	}
	b := setup(t, setupOptions{now: clock.Now, vendors: registry, queue: queue, redis: rdb, db: db,
		configure: func(c *config.Config) {
			c.DisbursementSubmitWait = o.submitWait
			c.DisbursementLockTTL = o.lockTTL
		}})
	e := &payoutEnv{bundle: b, svc: svc, store: store, vendor: counting, inline: inline, clock: clock}
	e.m = b.newMerchant()
	e.wallet = b.newWallet(e.m.id, "Main", sandbox.SimBank, false)
	e.ewallet = b.newWallet(e.m.id, "E-wallets", sandbox.SimWallet, false)
	if o.funds != "none" {
		b.fund(e.wallet, o.funds)
		b.fund(e.ewallet, o.funds)
	}
	if o.withdrawals != "" {
		e.update(map[string]string{"withdrawals": string(o.withdrawals)})
	}
	return e
}

// inlineQueue runs a submit inside the enqueue (so a fresh create's wait
// sees the vendor's answer at once) and keeps polls for drain. With hold
// it keeps submits too, for runSubmits; while down every enqueue fails,
// as with Redis unreachable.
type inlineQueue struct {
	svc     *payouts.Service
	mu      sync.Mutex
	polls   []uuid.UUID
	hold    bool
	down    bool
	submits []uuid.UUID
	events  []uuid.UUID // webhook events enqueued (delivery is tested elsewhere)
}

var errQueueDown = errors.New("test queue is down")

func (q *inlineQueue) EnqueueSubmit(ctx context.Context, id uuid.UUID, _ string) error {
	q.mu.Lock()
	if q.down {
		q.mu.Unlock()
		return errQueueDown
	}
	if q.hold {
		q.submits = append(q.submits, id)
		q.mu.Unlock()
		return nil
	}
	q.mu.Unlock()
	err := q.svc.Submit(context.WithoutCancel(ctx), id)
	// A deadlock victim is retried, as the worker's queue would.
	for retry := 0; retry < 3 && database.IsRetryable(err); retry++ {
		err = q.svc.Submit(context.WithoutCancel(ctx), id)
	}
	if err != nil && !errors.Is(err, payouts.ErrOutcomeUnknown) {
		return err
	}
	return nil
}

func (q *inlineQueue) EnqueuePoll(_ context.Context, id uuid.UUID, _ string, _ time.Duration) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.down {
		return errQueueDown
	}
	q.polls = append(q.polls, id)
	return nil
}

// setDown makes every enqueue fail (true) or work again (false).
func (q *inlineQueue) EnqueueWebhook(_ context.Context, id uuid.UUID, _ string) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.down {
		return errQueueDown
	}
	q.events = append(q.events, id)
	return nil
}

func (q *inlineQueue) EnqueuePaymentExpire(context.Context, uuid.UUID, time.Time) error { return nil }

func (q *inlineQueue) EnqueuePaymentSettle(context.Context, uuid.UUID, time.Time) error { return nil }

func (q *inlineQueue) setDown(down bool) {
	q.mu.Lock()
	q.down = down
	q.mu.Unlock()
}

// runSubmits runs the submits a noSubmit queue holds, as the worker would,
// and returns the ids it ran.
func (e *payoutEnv) runSubmits() []uuid.UUID {
	e.t.Helper()
	e.inline.mu.Lock()
	ids := e.inline.submits
	e.inline.submits = nil
	e.inline.mu.Unlock()
	for _, id := range ids {
		if err := e.svc.Submit(context.Background(), id); err != nil && !errors.Is(err, payouts.ErrOutcomeUnknown) {
			e.t.Fatalf("submit %s: %v", id, err)
		}
	}
	return ids
}

// countingStore is the sandbox vendors' store, counting the payouts they
// accepted (every Submit call that reached the vendor's book).
type countingStore struct {
	*sandbox.MemoryStore
	mu      sync.Mutex
	submits int
}

func (c *countingStore) RecordSubmit(ctx context.Context, vendor string, p vendors.Payout, at time.Time) (sandbox.Record, error) {
	c.mu.Lock()
	c.submits++
	c.mu.Unlock()
	return c.MemoryStore.RecordSubmit(ctx, vendor, p, at)
}

// submitsAccepted is how many Submit calls reached the sandbox vendors.
func (c *countingStore) submitsAccepted() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.submits
}

// drain runs the queued polls (and what they enqueue) until none is left.
func (e *payoutEnv) drain() {
	e.t.Helper()
	for round := 0; round < 50; round++ {
		e.inline.mu.Lock()
		polls := e.inline.polls
		e.inline.polls = nil
		e.inline.mu.Unlock()
		if len(polls) == 0 {
			return
		}
		for _, id := range polls {
			if err := e.svc.Poll(context.Background(), id); err != nil && !errors.Is(err, payouts.ErrOutcomeUnknown) {
				e.t.Fatalf("poll %s: %v", id, err)
			}
		}
	}
}

// payoutBody builds a create body; fields "" are left out.
type payoutBody struct {
	wallet, amount, bank, account, transferType, memo, referenceID string
}

func (p payoutBody) json() []byte {
	m := map[string]string{}
	for k, v := range map[string]string{"client_wallet_id": p.wallet, "amount": p.amount, "bank_code": p.bank,
		"account_no": p.account, "transfer_type": p.transferType, "memo": p.memo, "reference_id": p.referenceID} {
		if v != "" {
			m[k] = v
		}
	}
	b, _ := json.Marshal(m)
	return b
}

// body is a valid BIFAST payout of amount from the main wallet to account.
func (e *payoutEnv) body(amount, account string) payoutBody {
	return payoutBody{wallet: e.wallet.String(), amount: amount, bank: "bca", account: account, transferType: "BIFAST"}
}

func (e *payoutEnv) create(key string, p payoutBody) response {
	e.t.Helper()
	headers := map[string]string{}
	if key != "" {
		headers["Idempotency-Key"] = key
	}
	return e.do(request{method: http.MethodPost, path: "/api/v3/disbursements", body: p.json(), apiKey: e.m.apiKey, sign: e.m.signingSecret, headers: headers})
}

func (e *payoutEnv) quote(p payoutBody) response {
	e.t.Helper()
	return e.do(request{method: http.MethodPost, path: "/api/v3/disbursements/quote", body: p.json(), apiKey: e.m.apiKey, sign: e.m.signingSecret})
}

func (e *payoutEnv) get(id string) response {
	e.t.Helper()
	return e.do(request{path: "/api/v3/disbursements/" + id, apiKey: e.m.apiKey, sign: e.m.signingSecret})
}

// disbursementJSON is a disbursement as answered.
type disbursementJSON struct {
	ID                string  `json:"id"`
	ClientID          string  `json:"client_id"`
	WalletID          string  `json:"wallet_id"`
	Status            string  `json:"status"`
	Amount            string  `json:"amount"`
	PlatformFee       string  `json:"platform_fee"`
	NetAmount         string  `json:"net_amount"`
	Currency          string  `json:"currency"`
	BankCode          string  `json:"bank_code"`
	BankName          string  `json:"bank_name"`
	AccountNo         string  `json:"account_no"`
	AccountHolderName string  `json:"account_holder_name"`
	Memo              *string `json:"memo"`
	ReferenceID       *string `json:"reference_id"`
	IdempotencyKey    string  `json:"idempotency_key"`
	FailedReason      *string `json:"failed_reason"`
	RequestedAt       *string `json:"requested_at"`
	CompletedAt       *string `json:"completed_at"`
}

func (r response) disbursement(t *testing.T) disbursementJSON {
	t.Helper()
	var d disbursementJSON
	r.decode(t, &d)
	return d
}

// status reads a disbursement's stored status.
func (e *payoutEnv) status(id string) models.DisbursementStatus {
	e.t.Helper()
	d, err := e.svc.Get(context.Background(), uuid.MustParse(id))
	if err != nil {
		e.t.Fatalf("read disbursement %s: %v", id, err)
	}
	return d.Status
}

// eventually waits (real worker) until the disbursement has status want.
func (e *payoutEnv) eventually(id string, want models.DisbursementStatus) {
	e.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if e.status(id) == want {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	e.t.Fatalf("disbursement %s is %s, want %s", id, e.status(id), want)
}

// balance reads a wallet's balance and lock.
func (e *payoutEnv) balance(wallet uuid.UUID) (balance, locked models.Amount) {
	e.t.Helper()
	w, err := models.NewStore(e.db).FindWallet(context.Background(), wallet)
	if err != nil {
		e.t.Fatal(err)
	}
	return w.Balance, w.Locked
}

func (e *payoutEnv) reconciled() {
	e.t.Helper()
	report, err := ledger.Reconcile(context.Background(), e.db)
	if err != nil {
		e.t.Fatal(err)
	}
	if !report.OK {
		e.t.Fatalf("reconcile: %v", report.Problems)
	}
}

func (e *payoutEnv) update(settings map[string]string) {
	e.t.Helper()
	if _, err := admin.UpdateClient(context.Background(), e.admin, e.m.id, settings); err != nil {
		e.t.Fatalf("update client: %v", err)
	}
}

// submitCalls is how often the sandbox vendor was asked to pay a
// disbursement.
func (e *payoutEnv) submitCalls(id string) int {
	e.t.Helper()
	rec, err := e.store.Get(context.Background(), models.VendorReferenceFor(uuid.MustParse(id)))
	if errors.Is(err, vendors.ErrUnknownPayout) {
		return 0
	}
	if err != nil {
		e.t.Fatal(err)
	}
	return rec.SubmitCalls
}

func rp(n int64) string { return fmt.Sprint(n) }
