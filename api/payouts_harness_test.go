package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"
	"gorm.io/gorm"

	"github.com/payoutd/payoutd/admin"
	"github.com/payoutd/payoutd/dispatch"
	"github.com/payoutd/payoutd/internal/config"
	"github.com/payoutd/payoutd/internal/database"
	"github.com/payoutd/payoutd/internal/testenv"
	"github.com/payoutd/payoutd/ledger"
	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/payments"
	"github.com/payoutd/payoutd/payouts"
	"github.com/payoutd/payoutd/tasks"
	"github.com/payoutd/payoutd/vendors"
	"github.com/payoutd/payoutd/vendors/sandbox"
	"github.com/payoutd/payoutd/vendors/vendorsim"
	"github.com/payoutd/payoutd/vendors/xendit"
	"github.com/payoutd/payoutd/vendors/xendit/xenditsim"
	"github.com/payoutd/payoutd/webhooks"
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
	// dispatch is svc's dispatcher: the sweep, the approvals' submits.
	dispatch *dispatch.Dispatcher
	store    *sandbox.MemoryStore
	vendor   *countingStore // counts every payout the sandbox vendors accepted
	inline   *inlineQueue   // nil with a real worker
	clock    *testClock
	// inquiryGate holds an armed account inquiry (a slow vendor); statusDown
	// makes every vendor status check fail as unreachable (polls learn
	// nothing, callbacks still arrive).
	inquiryGate *gate
	statusDown  *atomic.Bool
	// inquiries counts the account inquiries the vendors were asked;
	// statusChecks the status queries (polls and callback confirmations).
	inquiries    *atomic.Int64
	statusChecks *atomic.Int64
	// walletReads holds an armed read of a wallet row (holds option).
	walletReads *gate
	// queueOpt and queuePrefix name the worker's Redis and its queues
	// (worker option), for a test that inspects or pauses them.
	queueOpt    asynq.RedisConnOpt
	queuePrefix string
	// sim is the HTTP vendor simulator (vendorsim option), which reports
	// final payouts to the API's /vendor-callbacks over a real socket.
	sim *vendorsim.Server
	// xsim is the Xendit simulator (xendit option), served on a real
	// socket and sending its webhooks to the API's
	// /vendor-callbacks/xendit; xwallet is a funded wallet on xendit.
	xsim    *xenditsim.Server
	xwallet uuid.UUID
	// snap is the SNAP BI bank "bca" simulated on a real socket (snap
	// option), sending its signed notifications to the API's
	// /vendor-callbacks/snap/bca; swallet is a funded wallet on snap:bca.
	snap    *snapSim
	swallet uuid.UUID
}

// xenditKey and xenditToken are the simulator's secret key and callback
// token.
const xenditKey, xenditToken = "xnd_development_apitest", "apitest-callback-token"

// vendorSimSecret is the vendorsim bearer token; vendorSimCallbackSecret
// its callback signing key.
const vendorSimSecret, vendorSimCallbackSecret = "test-vendorsim-token", "test-vendorsim-callback-secret"

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
	// holds installs the database hook behind e.walletReads, which can hold
	// one read of the wallets table.
	holds bool
	// vendorsim serves the sandbox vendors over HTTP (vendorsim) and sends
	// their signed callbacks to the API, served on a real socket.
	vendorsim bool
	// xendit adds a xendit vendor over HTTP (xenditsim, final after
	// completeAfter) whose webhooks reach the API on a real socket.
	xendit bool
	// snap adds the vendor snap:bca over HTTP (snapsim, final after
	// completeAfter), its transfers kept in the test database, its
	// notifications reaching the API on a real socket.
	snap bool
	// configure adjusts the API's configuration further (rate limits).
	configure func(*config.Config)
	// pollsLater (worker option) runs every payout:poll this much later
	// than the service asks: payouts.PollDelay is a fixed schedule, not a
	// setting, so a test that needs polls far apart stretches them here.
	pollsLater time.Duration
	// inlineSubmit makes the service submit a waiting create itself, as
	// the API process does with DISBURSEMENT_SUBMIT_WAIT above 0
	// (app.NewServices); the queued task stays the fallback.
	inlineSubmit bool
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
	sandboxOpts := sandbox.Options{Store: counting, CompleteAfter: o.completeAfter, Now: clock.Now}
	registry := sandbox.Registry(sandboxOpts)
	var sim *vendorsim.Server
	var apiHandler atomic.Value // the API's handler, once built, for callbacks
	apiWakes := &lateWakes{}    // the API's payout service, once built
	var xsim *xenditsim.Server
	if o.xendit {
		api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h, _ := apiHandler.Load().(http.Handler)
			if h == nil {
				http.Error(w, "not ready", http.StatusServiceUnavailable)
				return
			}
			h.ServeHTTP(w, r)
		}))
		t.Cleanup(api.Close)
		var err error
		xsim, err = xenditsim.New(xenditsim.Options{SecretKey: xenditKey, CallbackToken: xenditToken,
			CallbackURL: api.URL + "/vendor-callbacks/xendit", CompleteAfter: o.completeAfter, Now: clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		ts := httptest.NewServer(xsim)
		t.Cleanup(ts.Close)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- xsim.Run(ctx, 20*time.Millisecond) }()
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("xenditsim: %v", err)
			}
		})
		x, err := xendit.New(xendit.Options{BaseURL: ts.URL, SecretKey: xenditKey, CallbackToken: xenditToken, RetryBackoff: 20 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		registry = vendors.NewRegistry(registry[sandbox.SimBank], registry[sandbox.SimWallet], x)
	}
	if o.vendorsim {
		api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h, _ := apiHandler.Load().(http.Handler)
			if h == nil {
				http.Error(w, "not ready", http.StatusServiceUnavailable)
				return
			}
			h.ServeHTTP(w, r)
		}))
		t.Cleanup(api.Close)
		var err error
		sim, err = vendorsim.NewServer(vendorsim.ServerOptions{Token: vendorSimSecret, CallbackSecret: vendorSimCallbackSecret, Sandbox: sandboxOpts,
			CallbackURL: api.URL + "/vendor-callbacks", PollInterval: 20 * time.Millisecond, RetryBackoff: 50 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		ts := httptest.NewServer(sim)
		t.Cleanup(ts.Close)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- sim.Run(ctx) }()
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("vendorsim: %v", err)
			}
		})
		registry, err = vendorsim.NewRegistry(ts.URL, vendorsim.Secrets{Token: vendorSimSecret, CallbackSecret: vendorSimCallbackSecret}, vendorsim.ClientOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
	db := testenv.DB(t)
	var snapBank *snapSim
	if o.snap {
		snapBank = newSnapSim(t, db, clock, o.completeAfter, &apiHandler)
		registry[snapBank.vendor.Name()] = snapBank.vendor
	}
	inquiryGate, statusDown, inquiries, statusChecks := &gate{}, &atomic.Bool{}, &atomic.Int64{}, &atomic.Int64{}
	registry = switchable(registry, inquiryGate, statusDown, inquiries, statusChecks)
	rdb, _ := testenv.Redis(t)
	walletReads := &gate{}
	if o.holds {
		// A wallet is read through the ORM (table known) or by hand (SQL
		// already built); a test whose hold is never reached says so.
		holdOnWalletRead := func(tx *gorm.DB) {
			if tx.Statement.Table == "wallets" || strings.Contains(tx.Statement.SQL.String(), "FROM wallets") {
				walletReads.pass()
			}
		}
		if err := db.Callback().Query().Before("gorm:query").Register("test:hold_wallet_query", holdOnWalletRead); err != nil {
			t.Fatal(err)
		}
		if err := db.Callback().Row().Before("gorm:row").Register("test:hold_wallet_row", holdOnWalletRead); err != nil {
			t.Fatal(err)
		}
	}
	var queue Queue
	var inline *inlineQueue
	var svcQueue Queue
	var queueOpt asynq.RedisConnOpt
	var queuePrefix string
	if o.worker {
		opt, prefix := testenv.Queue(t, rdb)
		queueOpt, queuePrefix = opt, prefix
		client := tasks.NewPrefixedClient(opt, prefix)
		t.Cleanup(func() { client.Close() })
		queue, svcQueue = client, client
		if o.pollsLater > 0 {
			later := laterPolls{Client: client, by: o.pollsLater}
			queue, svcQueue = later, later
		}
		// The worker tells the API's waiting creates of its commits, as
		// app.RedisWakes does between processes.
		_, workerDispatch := dispatch.New(payouts.Options{DB: db, Vendors: registry, Queue: svcQueue, LockTTL: o.lockTTL, SubmitLease: time.Second, Now: clock.Now},
			dispatch.Options{Queue: svcQueue, Notifier: apiWakes})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		// Payments and webhooks have nothing to do here, but their periodic
		// sweeps run and must find a service.
		pay := payments.New(payments.Options{DB: db, Now: clock.Now})
		hooks := webhooks.New(webhooks.Options{DB: db, Now: clock.Now})
		go func() {
			done <- worker.Run(ctx, worker.Deps{DB: db, Redis: opt, Dispatch: workerDispatch, Payments: pay, Webhooks: hooks,
				QueuePrefix: prefix, Concurrency: 8})
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
	svc, svcDispatch := dispatch.New(payouts.Options{DB: db, Vendors: registry, Queue: svcQueue, LockTTL: o.lockTTL, SubmitLease: time.Second, Now: clock.Now},
		dispatch.Options{Queue: svcQueue, Notifier: apiWakes})
	if inline != nil {
		inline.svc = svc
	}
	b := setup(t, setupOptions{now: clock.Now, vendors: registry, queue: queue, redis: rdb, db: db, inlineSubmit: o.inlineSubmit,
		configure: func(c *config.Config) {
			c.DisbursementSubmitWait = o.submitWait
			c.DisbursementLockTTL = o.lockTTL
			if o.configure != nil {
				o.configure(c)
			}
		}})
	e := &payoutEnv{bundle: b, svc: svc, dispatch: svcDispatch, store: store, vendor: counting, inline: inline, clock: clock,
		inquiryGate: inquiryGate, statusDown: statusDown, inquiries: inquiries, statusChecks: statusChecks, walletReads: walletReads, sim: sim, xsim: xsim,
		queueOpt: queueOpt, queuePrefix: queuePrefix, snap: snapBank}
	apiHandler.Store(b.server.Handler())
	apiWakes.dispatch.Store(b.server.dispatch)
	e.m = b.newMerchant()
	e.wallet = b.newWallet(e.m.id, "Main", sandbox.SimBank, false)
	e.ewallet = b.newWallet(e.m.id, "E-wallets", sandbox.SimWallet, false)
	if o.xendit {
		e.xwallet = b.newWallet(e.m.id, "Xendit", xendit.Name, false)
	}
	if o.snap {
		e.swallet = b.newWallet(e.m.id, "BCA", snapBank.vendor.Name(), false)
	}
	if o.funds != "none" {
		b.fund(e.wallet, o.funds)
		b.fund(e.ewallet, o.funds)
		if o.xendit {
			b.fund(e.xwallet, o.funds)
		}
		if o.snap {
			b.fund(e.swallet, o.funds)
		}
	}
	if o.withdrawals != "" {
		e.update(map[string]string{"withdrawals": string(o.withdrawals)})
	}
	return e
}

// lateWakes wakes the waiting creates of a dispatcher set once built: a
// dispatch.Notifier between the worker's dispatcher and the API's.
type lateWakes struct {
	dispatch atomic.Pointer[dispatch.Dispatcher]
}

func (w *lateWakes) Notify(_ context.Context, ids []uuid.UUID) {
	if x := w.dispatch.Load(); x != nil {
		x.Wake(ids...)
	}
}

// gate holds the first call that passes it once armed, until released: a
// create stopped at a chosen step while its twin runs.
type gate struct {
	mu      sync.Mutex
	armed   bool
	reached chan struct{}
	release chan struct{}
}

// arm makes the next pass hold; it returns a channel closed when a call
// is held, and the function that lets it go on.
func (g *gate) arm() (reached <-chan struct{}, release func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.armed, g.reached, g.release = true, make(chan struct{}), make(chan struct{})
	rel := g.release
	var once sync.Once
	return g.reached, func() { once.Do(func() { close(rel) }) }
}

func (g *gate) pass() {
	g.mu.Lock()
	if !g.armed {
		g.mu.Unlock()
		return
	}
	g.armed = false
	reached, release := g.reached, g.release
	g.mu.Unlock()
	close(reached)
	<-release
}

// switchable wraps every vendor of r with the harness's switches (a gate
// on Inquire, statusDown on Status). A wrapped vendor implements
// vendors.Completer and vendors.CallbackParser exactly when the vendor it
// wraps does, and notifies exactly when it does, as the API, the payout
// service and the operator commands check for them.
func switchable(r vendors.Registry, inquiry *gate, statusDown *atomic.Bool, inquiries, statusChecks *atomic.Int64) vendors.Registry {
	out := make(vendors.Registry, len(r))
	for name, v := range r {
		base := switchedVendor{Vendor: v, inquiry: inquiry, statusDown: statusDown, inquiries: inquiries, statusChecks: statusChecks}
		completer, canComplete := v.(vendors.Completer)
		parser, parsesCallbacks := vendors.ReceiverOf(v)
		switch {
		case canComplete && parsesCallbacks:
			out[name] = struct {
				switchedVendor
				vendors.Completer
				vendors.Receiver
			}{base, completer, parser}
		case canComplete:
			out[name] = struct {
				switchedVendor
				vendors.Completer
			}{base, completer}
		case parsesCallbacks:
			out[name] = struct {
				switchedVendor
				vendors.Receiver
			}{base, parser}
		default:
			out[name] = base
		}
	}
	return out
}

type switchedVendor struct {
	vendors.Vendor
	inquiry      *gate
	statusDown   *atomic.Bool
	inquiries    *atomic.Int64
	statusChecks *atomic.Int64
}

func (v switchedVendor) Inquire(ctx context.Context, req vendors.InquiryRequest) (vendors.Account, error) {
	v.inquiries.Add(1)
	v.inquiry.pass()
	return v.Vendor.Inquire(ctx, req)
}

func (v switchedVendor) Status(ctx context.Context, reference string) (vendors.PayoutResult, error) {
	v.statusChecks.Add(1)
	if v.statusDown.Load() {
		return vendors.PayoutResult{}, fmt.Errorf("%w: status endpoint down (test)", vendors.ErrUnavailable)
	}
	return v.Vendor.Status(ctx, reference)
}

// laterPolls is the worker's queue with every payout:poll put off by by.
type laterPolls struct {
	*tasks.Client
	by time.Duration
}

func (q laterPolls) EnqueuePoll(ctx context.Context, id uuid.UUID, slot string, after time.Duration) error {
	return q.Client.EnqueuePoll(ctx, id, slot, after+q.by)
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

// setDown makes every enqueue fail (true) or work again (false).
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
	holderName                                                     string // account_holder_name; "" sends none
}

func (p payoutBody) json() []byte {
	m := map[string]string{}
	for k, v := range map[string]string{"client_wallet_id": p.wallet, "amount": p.amount, "bank_code": p.bank,
		"account_no": p.account, "transfer_type": p.transferType, "memo": p.memo, "reference_id": p.referenceID,
		"account_holder_name": p.holderName} {
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
	report, err := ledger.Reconcile(context.Background(), e.db, e.clock.Now())
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

// forEachQueue runs body twice, in parallel: with the inline queue (the
// submit runs inside the create, polls when the test says) and with the
// real asynq worker in-process (real Redis and PostgreSQL in CI), so that
// a rule is shown to hold whichever carries the payout to the vendor.
func forEachQueue(t *testing.T, o payoutSetup, body func(t *testing.T, e *payoutEnv)) {
	t.Helper()
	for _, mode := range []string{"inline", "worker"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			if mode == "worker" {
				body(t, workerSetup(t, o))
				return
			}
			body(t, setupPayouts(t, o))
		})
	}
}
