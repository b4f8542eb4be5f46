package api

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"

	"github.com/payoutd/payoutd/admin"
	"github.com/payoutd/payoutd/dispatch"
	"github.com/payoutd/payoutd/internal/config"
	"github.com/payoutd/payoutd/internal/conformance"
	"github.com/payoutd/payoutd/internal/credentials"
	"github.com/payoutd/payoutd/internal/inquirybudget"
	"github.com/payoutd/payoutd/internal/metrics"
	"github.com/payoutd/payoutd/internal/testenv"
	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/payments"
	"github.com/payoutd/payoutd/payouts"
	"github.com/payoutd/payoutd/signature"
	"github.com/payoutd/payoutd/vendors"
	"github.com/payoutd/payoutd/vendors/sandbox"
	"github.com/payoutd/payoutd/vendors/sandboxacquirer"
)

// testAcquirerSecret signs the sandbox acquirer's notifications in tests.
const testAcquirerSecret = "test-acquirer-secret"

// fixedNow is the server's clock in these tests.
var fixedNow = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

// bundle is what an API test needs.
type bundle struct {
	t     testing.TB
	db    *gorm.DB
	redis *redis.Client
	// dashRedis is the dashboard's Redis (setupOptions.dashboard).
	dashRedis *redis.Client
	server    *Server
	admin     admin.Deps
	env       models.Environment
	now       func() time.Time // the server's clock; requests are signed with it
	// metrics are the server's, served at /metrics.
	metrics *metrics.Metrics
	// lastSigned is the t (Unix ms) of the last signature do made; shared
	// by copies of the bundle (sub).
	lastSigned *atomic.Int64
}

type setupOptions struct {
	env            models.Environment
	trustedProxies string
	// now is the server's clock; nil means fixedNow.
	now func() time.Time
	// vendors replaces the in-memory sandbox vendors.
	vendors vendors.Registry
	// queue hands payouts to a worker; nil leaves them unsubmitted.
	queue Queue
	// configure adjusts the configuration (submit wait, lock TTL, ...).
	configure func(*config.Config)
	// inlineSubmit makes the API's service submit a waiting create itself,
	// as app.NewServices builds it with DISBURSEMENT_SUBMIT_WAIT above 0.
	inlineSubmit bool
	// redis is the test's Redis client; nil makes one.
	redis *redis.Client
	// db is the test's database; nil makes one.
	db *gorm.DB
	// dashboard mounts the queue dashboard (asynqmon) on the test's Redis.
	dashboard bool
}

func setup(t testing.TB, opts ...setupOptions) *bundle {
	t.Helper()
	o := setupOptions{env: models.Production}
	if len(opts) > 0 {
		o = opts[0]
	}
	if o.env == "" {
		o.env = models.Production
	}
	if o.now == nil {
		o.now = func() time.Time { return fixedNow }
	}
	db := o.db
	if db == nil {
		db = testenv.DB(t)
	}
	rdb := o.redis
	if rdb == nil {
		rdb, _ = testenv.Redis(t)
	}
	key := make([]byte, 32)
	rand.Read(key)
	sealer, err := credentials.NewSealer(key)
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Defaults()
	cfg.Env = o.env
	// Tests send bursts from one client; the limits' own tests set them.
	cfg.ClientWriteRateLimit, cfg.ClientReadRateLimit, cfg.MaxInFlight = 0, 0, 0
	// Every test's requests come from one address and, on TEST_REDIS_URL,
	// share one Redis: the failed authentication limit's own tests set it.
	cfg.AuthFailureRateLimit = 0
	cfg.SecretsKey = key
	if o.trustedProxies != "" {
		cfg.TrustedProxies, err = models.ParseCIDRList(o.trustedProxies)
		if err != nil {
			t.Fatal(err)
		}
	}
	if o.configure != nil {
		o.configure(&cfg)
	}
	registry := o.vendors
	if registry == nil {
		registry = sandbox.Registry(sandbox.Options{})
	}
	acq, err := sandboxacquirer.New(sandboxacquirer.Options{Secret: testAcquirerSecret, Now: o.now})
	if err != nil {
		t.Fatal(err)
	}
	m := metrics.New()
	var queueRedis asynq.RedisConnOpt
	var dashRedis *redis.Client
	if o.dashboard {
		// A Redis database of the test's own: the dashboard lists every
		// queue of its database, and another test deleting its queue
		// meanwhile made the list answer 500.
		opts, err := redis.ParseURL(testenv.RedisDatabase(t))
		if err != nil {
			t.Fatal(err)
		}
		dashRedis = redis.NewClient(opts)
		t.Cleanup(func() { dashRedis.Close() })
		queueRedis, _ = testenv.Queue(t, dashRedis)
	}
	srv, err := New(withServices(Deps{Config: cfg, DB: db, Redis: rdb, Sealer: sealer, Vendors: registry, Queue: o.queue, Acquirer: acq, Now: o.now, Metrics: m,
		QueueRedis: queueRedis}, func(po *payouts.Options) { po.SubmitInline = o.inlineSubmit }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	checkAnswers(t, srv)
	return &bundle{t: t, db: db, redis: rdb, dashRedis: dashRedis, server: srv, env: o.env, now: o.now, metrics: m, lastSigned: &atomic.Int64{},
		admin: admin.Deps{DB: db, Sealer: sealer, Env: o.env, Vendors: registry, ClientChanged: srv.ForgetClient, Payments: srv.payments, Payouts: srv.payouts, Now: o.now}}
}

// withServices fills d's services as the composition root (internal/app,
// which imports this package) builds them for the API: on d's queue, clock
// and metrics, with the API's inquiry budget; adjust changes the payout
// service's options further.
func withServices(d Deps, adjust ...func(*payouts.Options)) Deps {
	var payoutQueue payouts.Queue
	var paymentQueue payments.Queue
	if d.Queue != nil {
		payoutQueue, paymentQueue = d.Queue, d.Queue
	}
	// The inquiry budget as internal/app gives it (which api cannot import).
	var budget payouts.InquiryBudget
	if d.Redis != nil && d.Config.InquiryRefusalRateLimit > 0 {
		budget = inquirybudget.New(d.Redis, d.Config.InquiryRefusalRateLimit)
	}
	po := payouts.Options{DB: d.DB, Vendors: d.Vendors, Queue: payoutQueue,
		LockTTL: d.Config.DisbursementLockTTL, SubmitLease: d.Config.DisbursementSubmitLease, Now: d.Now, Metrics: d.Metrics,
		InquiryBudget: budget, ReturnWatch: d.Config.PayoutReturnWatch()}
	for _, f := range adjust {
		f(&po)
	}
	var submitQueue dispatch.Queue
	if d.Queue != nil {
		submitQueue = d.Queue
	}
	d.Payouts, d.Dispatch = dispatch.New(po, dispatch.Options{Queue: submitQueue})
	d.Payments = payments.New(payments.Options{DB: d.DB, Acquirer: d.Acquirer, Queue: paymentQueue,
		Calendar: payments.Calendar{Holidays: d.Config.SettlementHolidays, Delay: d.Config.SettlementDelay}, Now: d.Now, Metrics: d.Metrics})
	return d
}

// merchant is a client made through the admin functions, as operators do.
type merchant struct {
	id             uuid.UUID
	apiKey         string
	signingSecret  string
	callbackSecret string
}

func (b *bundle) newClient(o admin.ClientOptions) merchant {
	b.t.Helper()
	if o.Name == "" {
		o.Name = "Toko Test"
	}
	creds, err := admin.CreateClient(context.Background(), b.admin, o)
	if err != nil {
		b.t.Fatalf("create client: %v", err)
	}
	m := merchant{id: uuid.MustParse(creds.ClientID), apiKey: creds.APIKey, callbackSecret: creds.CallbackSecret}
	if creds.SigningSecret != nil {
		m.signingSecret = *creds.SigningSecret
	}
	return m
}

func (b *bundle) newMerchant() merchant { return b.newClient(admin.ClientOptions{}) }

func (b *bundle) newWallet(clientID uuid.UUID, name, vendor string, provisioning bool) uuid.UUID {
	b.t.Helper()
	w, err := admin.CreateWallet(context.Background(), b.admin, admin.WalletOptions{
		ClientID: clientID, Name: name, Vendor: vendor, Provisioning: provisioning})
	if err != nil {
		b.t.Fatalf("create wallet: %v", err)
	}
	return uuid.MustParse(w.WalletID)
}

func (b *bundle) fund(walletID uuid.UUID, amount string) {
	b.t.Helper()
	if _, err := admin.AdjustWallet(context.Background(), b.admin, walletID, amount, "test funding"); err != nil {
		b.t.Fatalf("fund wallet: %v", err)
	}
}

// request describes one call; the zero value is an unauthenticated GET.
type request struct {
	method    string
	path      string
	body      []byte
	headers   map[string]string
	remoteIP  string
	apiKey    string
	sign      string // signing secret: adds a valid x-signature of its own (signTime)
	timestamp bool   // adds a valid x-timestamp
}

type response struct {
	status  int
	header  http.Header
	body    []byte
	errBody string
	hint    string // the error body's "hint"
}

func (b *bundle) do(r request) response {
	b.t.Helper()
	if r.method == "" {
		r.method = http.MethodGet
	}
	req := httptest.NewRequest(r.method, r.path, bytes.NewReader(r.body))
	// An answer api/openapi.yaml does not describe fails this test.
	req = req.WithContext(conformance.WithTest(req.Context(), b.t))
	req.RemoteAddr = "203.0.113.10:40000"
	if r.remoteIP != "" {
		req.RemoteAddr = r.remoteIP + ":40000"
	}
	if r.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if r.apiKey != "" {
		req.Header.Set("x-api-key", r.apiKey)
	}
	if r.sign != "" {
		req.Header.Set("x-signature", signature.Sign(r.sign, r.body, b.signTime()))
	}
	if r.timestamp {
		req.Header.Set("x-timestamp", millis(b.now()))
	}
	for k, v := range r.headers {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	b.server.Handler().ServeHTTP(rec, req)
	resp := response{status: rec.Code, header: rec.Header(), body: rec.Body.Bytes()}
	var e struct {
		Error *string `json:"error"`
		Hint  string  `json:"hint"`
	}
	if json.Unmarshal(resp.body, &e) == nil && e.Error != nil {
		resp.errBody, resp.hint = *e.Error, e.Hint
	}
	return resp
}

// signTime is the t of a new signature: the clock's, or a millisecond
// after the previous signature's when the clock has not moved (the fixed
// clocks of these tests). A signature is used once, so each request do
// signs gets its own, as a merchant's would; a test that means to send a
// signature again sets x-signature itself.
func (b *bundle) signTime() time.Time {
	now := b.now().UnixMilli()
	for {
		last := b.lastSigned.Load()
		t := max(now, last+1)
		if b.lastSigned.CompareAndSwap(last, t) {
			return time.UnixMilli(t)
		}
	}
}

func millis(t time.Time) string { return jsonNumber(t.UnixMilli()) }

func jsonNumber(n int64) string { b, _ := json.Marshal(n); return string(b) }

// expect fails the test unless the response has the status and, for an
// error status, the body is exactly {"error": msg} with at most a
// non-empty "hint" beside it (msg "" skips the text).
func (r response) expect(t *testing.T, status int, msg string) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d; body %s", r.status, status, r.body)
	}
	if status >= 400 {
		var m map[string]any
		err := json.Unmarshal(r.body, &m)
		hint, hinted := m["hint"].(string)
		if err != nil || len(m) != 1 && !(len(m) == 2 && hinted && hint != "") {
			t.Fatalf("error body must be exactly {\"error\": ...} and maybe a \"hint\", got %s", r.body)
		}
		if r.errBody == "" {
			t.Fatalf("error message empty: %s", r.body)
		}
		if msg != "" && r.errBody != msg {
			t.Fatalf("error %q, want %q", r.errBody, msg)
		}
	}
}

func (r response) decode(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decode %s: %v", r.body, err)
	}
}
