package payments_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/payoutd/payoutd/admin"
	"github.com/payoutd/payoutd/dispatch"
	"github.com/payoutd/payoutd/internal/credentials"
	"github.com/payoutd/payoutd/internal/testenv"
	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/payments"
	"github.com/payoutd/payoutd/payouts"
	"github.com/payoutd/payoutd/signature"
	"github.com/payoutd/payoutd/tasks"
	"github.com/payoutd/payoutd/vendors/sandbox"
	"github.com/payoutd/payoutd/vendors/sandboxacquirer"
	"github.com/payoutd/payoutd/webhooks"
	"github.com/payoutd/payoutd/worker"
)

// hook is one request the merchant's backend received.
type hook struct {
	path   string
	header http.Header
	body   []byte
}

// backend is the merchant's webhook receiver: it answers 200 and keeps
// every request.
type backend struct {
	mu   sync.Mutex
	got  []hook
	srv  *httptest.Server
	seen chan struct{}
}

func newBackend(t *testing.T) *backend {
	b := &backend{seen: make(chan struct{}, 64)}
	b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		b.mu.Lock()
		b.got = append(b.got, hook{r.URL.Path, r.Header.Clone(), body})
		b.mu.Unlock()
		b.seen <- struct{}{}
	}))
	t.Cleanup(b.srv.Close)
	return b
}

func (b *backend) hooks() []hook {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]hook(nil), b.got...)
}

// workerEnv is a merchant whose payment webhook is a backend, and the real
// asynq worker (worker.Run: handlers, retry delays, scheduler) in-process
// on the test's Redis, with SETTLEMENT_DELAY=2s.
type workerEnv struct {
	t       *testing.T
	db      *gorm.DB
	svc     *payments.Service // enqueues its tasks, as the api does
	quiet   *payments.Service // enqueues nothing
	queue   *tasks.Client
	client  *models.Client
	wallet  uuid.UUID
	secret  string // the client's callback secret
	backend *backend
	started time.Time // when the worker's scheduler started
}

const settlementDelay = 2 * time.Second

// merchant is a client provisioned as operators do, with a default wallet.
type merchant struct {
	client *models.Client
	wallet uuid.UUID
	secret string // the callback secret
	sealer *credentials.Sealer
}

// newMerchant provisions a merchant whose webhooks go to webhookBase +
// "/payouts" and "/payments" ("" for none).
func newMerchant(t *testing.T, db *gorm.DB, webhookBase string) merchant {
	t.Helper()
	ctx := context.Background()
	key := make([]byte, 32)
	rand.Read(key)
	sealer, _ := credentials.NewSealer(key)
	deps := admin.Deps{DB: db, Sealer: sealer, Env: models.Staging, Vendors: sandbox.Registry(sandbox.Options{})}
	o := admin.ClientOptions{Name: "Warung Maju"}
	if webhookBase != "" {
		o.PayoutWebhookURL, o.PaymentWebhookURL = webhookBase+"/payouts", webhookBase+"/payments"
	}
	creds, err := admin.CreateClient(ctx, deps, o)
	if err != nil {
		t.Fatal(err)
	}
	w, err := admin.CreateWallet(ctx, deps, admin.WalletOptions{ClientID: uuid.MustParse(creds.ClientID), Name: "Main", Vendor: sandbox.SimBank})
	if err != nil {
		t.Fatal(err)
	}
	client, err := models.NewStore(db).FindClient(ctx, uuid.MustParse(creds.ClientID))
	if err != nil {
		t.Fatal(err)
	}
	return merchant{client: client, wallet: uuid.MustParse(w.WalletID), secret: creds.CallbackSecret, sealer: sealer}
}

func newAcquirer(t *testing.T) *sandboxacquirer.Acquirer {
	t.Helper()
	acq, err := sandboxacquirer.New(sandboxacquirer.Options{Secret: "acquirer-secret"})
	if err != nil {
		t.Fatal(err)
	}
	return acq
}

func newWorkerEnv(t *testing.T) *workerEnv {
	t.Helper()
	ctx := context.Background()
	db := testenv.DB(t)
	rdb, _ := testenv.Redis(t)
	opt, prefix := testenv.Queue(t, rdb)
	e := &workerEnv{t: t, db: db, backend: newBackend(t)}
	m := newMerchant(t, db, e.backend.srv.URL)
	e.client, e.wallet, e.secret = m.client, m.wallet, m.secret
	sealer, registry := m.sealer, sandbox.Registry(sandbox.Options{})
	acq := newAcquirer(t)
	e.queue = tasks.NewPrefixedClient(opt, prefix)
	t.Cleanup(func() { e.queue.Close() })
	calendar := payments.Calendar{Delay: settlementDelay}
	e.svc = payments.New(payments.Options{DB: db, Acquirer: acq, Queue: e.queue, Calendar: calendar})
	e.quiet = payments.New(payments.Options{DB: db, Acquirer: acq, Calendar: calendar})
	deliverer := webhooks.New(webhooks.Options{DB: db, Sealer: sealer, Timeout: 2 * time.Second, Queue: e.queue,
		Schedule: webhooks.Schedule{Base: 100 * time.Millisecond, Cap: time.Second, Window: 10 * time.Second}})
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	e.started = time.Now()
	_, payoutDispatch := dispatch.New(payouts.Options{DB: db, Vendors: registry}, dispatch.Options{})
	go func() {
		done <- worker.Run(runCtx, worker.Deps{DB: db, Redis: opt, Dispatch: payoutDispatch,
			Webhooks: deliverer, Payments: e.svc, QueuePrefix: prefix, Concurrency: 4})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("worker: %v", err)
		}
	})
	return e
}

func (e *workerEnv) create(svc *payments.Service, expiresIn time.Duration) *models.Payment {
	e.t.Helper()
	p, err := svc.Create(context.Background(), e.client, payments.CreateRequest{Price: models.Rupiah(20_000), PayerID: "player-7",
		Flow: models.PaymentFlowEmbed, ExpiresIn: expiresIn})
	if err != nil {
		e.t.Fatal(err)
	}
	return p.Payment
}

func (e *workerEnv) get(id uuid.UUID) *models.Payment {
	e.t.Helper()
	p, err := e.svc.Get(context.Background(), id)
	if err != nil {
		e.t.Fatal(err)
	}
	return p
}

// waitUntil polls done every 20 ms until it holds or deadline passes.
func waitUntil(deadline time.Time, done func() bool) bool {
	for !done() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

// lateInASecond sleeps until 850 ms past a whole second: what is due two
// seconds later then is due late in its second, where asynq's whole-second
// schedule ran a task up to 850 ms before it.
func lateInASecond() {
	now := time.Now()
	at := now.Truncate(time.Second).Add(850 * time.Millisecond)
	if at.Before(now) {
		at = at.Add(time.Second)
	}
	time.Sleep(at.Sub(now))
}

// onTime is how late the worker may be: it checks scheduled tasks every
// 250 ms and tasks are scheduled at the next whole second.
const onTime = 1500 * time.Millisecond

// Expiry and settlement happen through their own tasks, within about a
// second of expired_at and settle_at, with the merchant's webhooks: not
// left to the payment sweep, which first runs tasks.PaymentSweepEvery
// after the worker starts, later than anything here. A task run before
// its payment is due (enqueued too early on purpose) is retried on time.
func TestPaymentTasksRunOnTimeInTheWorker(t *testing.T) {
	e := newWorkerEnv(t)
	ctx := context.Background()
	lateInASecond()
	expiring := e.create(e.svc, 2*time.Second)
	paid := e.create(e.svc, payments.DefaultExpiresIn)
	if applied, err := e.svc.Simulate(ctx, paid.ID, payments.ResultSuccess); err != nil || applied != payments.AppliedNow {
		t.Fatalf("simulate: %s %v", applied, err)
	}
	early := e.create(e.quiet, 2*time.Second)
	if err := e.queue.EnqueuePaymentExpire(ctx, early.ID, time.Now()); err != nil { // two seconds before it is due
		t.Fatal(err)
	}
	settleAt := *e.get(paid.ID).SettleAt

	deadline := settleAt
	if expiring.ExpiredAt.After(deadline) {
		deadline = expiring.ExpiredAt
	}
	finished := waitUntil(deadline.Add(onTime), func() bool {
		return e.get(expiring.ID).Status == models.PaymentExpired && e.get(early.ID).Status == models.PaymentExpired &&
			e.get(paid.ID).SettledAt != nil
	})
	if time.Since(e.started) >= tasks.PaymentSweepEvery {
		t.Fatalf("the test took %s: the payment sweep may have done the work", time.Since(e.started))
	}
	if !finished {
		t.Fatalf("%s after they were due: expiring %s, early %s, paid payment settled at %v",
			onTime, e.get(expiring.ID).Status, e.get(early.ID).Status, e.get(paid.ID).SettledAt)
	}
	for name, c := range map[string]struct{ due, at time.Time }{
		"expiry":                 {expiring.ExpiredAt, e.get(expiring.ID).UpdatedAt},
		"expiry of an early run": {early.ExpiredAt, e.get(early.ID).UpdatedAt},
		"settlement":             {settleAt, *e.get(paid.ID).SettledAt},
	} {
		if lag := c.at.Sub(c.due); lag < 0 || lag > onTime {
			t.Errorf("%s due at %s happened at %s (%s)", name, c.due.Format(time.RFC3339Nano), c.at.Format(time.RFC3339Nano), lag)
		} else {
			t.Logf("%s: %s after it was due", name, lag)
		}
	}
	wallet, err := models.NewStore(e.db).FindWallet(ctx, e.wallet)
	if err != nil || wallet.Balance != models.Rupiah(20_000-140) {
		t.Fatalf("wallet after settlement: %+v %v", wallet, err)
	}
}

// The payment webhooks reach the client's payment webhook URL, signed
// with its callback secret, with the envelope and exactly the data fields
// of docs/design.md (Webhooks), valued as the payment is stored.
func TestPaymentWebhookBodies(t *testing.T) {
	e := newWorkerEnv(t)
	ctx := context.Background()
	expiring := e.create(e.svc, time.Second)
	paid := e.create(e.svc, payments.DefaultExpiresIn)
	if _, err := e.svc.Simulate(ctx, paid.ID, payments.ResultSuccess); err != nil {
		t.Fatal(err)
	}
	ok := waitUntil(time.Now().Add(5*time.Second), func() bool { return len(e.backend.hooks()) >= 2 })
	if !ok {
		t.Fatalf("the backend received %d webhooks, want 2", len(e.backend.hooks()))
	}
	stored := map[uuid.UUID]*models.Payment{paid.ID: e.get(paid.ID), expiring.ID: e.get(expiring.ID)}
	want := map[string]*models.Payment{"payment.success": stored[paid.ID], "payment.expired": stored[expiring.ID]}
	for _, h := range e.backend.hooks() {
		if h.path != "/payments" || h.header.Get("Content-Type") != "application/json" {
			t.Errorf("webhook to %s with Content-Type %q, want /payments (the payment URL) and application/json", h.path, h.header.Get("Content-Type"))
		}
		if v := signature.Verify(e.secret, h.header.Get("x-callback-signature"), h.body, time.Now()); v.Diagnosis != signature.OK {
			t.Errorf("x-callback-signature %q: %s", h.header.Get("x-callback-signature"), v.Diagnosis)
		}
		var env struct {
			EventID   string          `json:"eventId"`
			Event     string          `json:"event"`
			CreatedAt string          `json:"createdAt"`
			Data      json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal(h.body, &env); err != nil {
			t.Fatalf("body %s: %v", h.body, err)
		}
		p := want[env.Event]
		if p == nil {
			t.Errorf("unexpected event %s: %s", env.Event, h.body)
			continue
		}
		delete(want, env.Event)
		if _, err := uuid.Parse(env.EventID); err != nil || h.header.Get("x-event-id") != env.EventID {
			t.Errorf("eventId %q, x-event-id %q", env.EventID, h.header.Get("x-event-id"))
		}
		if _, err := time.Parse(time.RFC3339, env.CreatedAt); err != nil || env.CreatedAt[len(env.CreatedAt)-1] != 'Z' {
			t.Errorf("createdAt %q: want RFC 3339 in UTC", env.CreatedAt)
		}
		var data map[string]any
		if err := json.Unmarshal(env.Data, &data); err != nil {
			t.Fatal(err)
		}
		expected := map[string]any{
			"paymentId": p.ID.String(), "playerId": "player-7", "status": string(p.Status), "amount": "20000",
			"platformFee": "140", "netAmount": "19860", "currency": "IDR", "paidAt": nil,
			"expiredAt": p.ExpiredAt.UTC().Format(time.RFC3339Nano), "settledAt": nil, "retrievalReferenceNo": nil,
		}
		if p.Status == models.PaymentSuccess {
			expected["paidAt"] = p.PaidAt.UTC().Format(time.RFC3339Nano)
			expected["retrievalReferenceNo"] = *p.RetrievalReferenceNo
		}
		if !reflect.DeepEqual(data, expected) {
			t.Errorf("%s data\n got  %v\n want %v", env.Event, data, expected)
		}
	}
	if len(want) != 0 {
		t.Errorf("events not received: %v", want)
	}
}
