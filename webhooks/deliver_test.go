package webhooks_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"
	"gorm.io/gorm"

	"github.com/payoutd/payoutd/admin"
	"github.com/payoutd/payoutd/dispatch"
	"github.com/payoutd/payoutd/internal/credentials"
	"github.com/payoutd/payoutd/internal/testenv"
	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/payouts"
	"github.com/payoutd/payoutd/signature"
	"github.com/payoutd/payoutd/tasks"
	"github.com/payoutd/payoutd/vendors/sandbox"
	"github.com/payoutd/payoutd/webhooks"
	"github.com/payoutd/payoutd/worker"
)

// receiver is a merchant backend: it answers each delivery as told and
// keeps what it received.
type receiver struct {
	mu       sync.Mutex
	answer   func(n int) int // status for the n-th request (1-based); 0 hangs
	requests []received
	server   *httptest.Server
}

type received struct {
	header http.Header
	body   []byte
}

func newReceiver(t *testing.T, answer func(n int) int) *receiver {
	r := &receiver{answer: answer}
	r.server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.requests = append(r.requests, received{req.Header.Clone(), body})
		status := r.answer(len(r.requests))
		r.mu.Unlock()
		if status == 0 {
			<-req.Context().Done() // never answers; the deliverer times out
			return
		}
		w.WriteHeader(status)
	}))
	t.Cleanup(r.server.Close)
	return r
}

func (r *receiver) got() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.requests...)
}

func (r *receiver) setAnswer(f func(int) int) {
	r.mu.Lock()
	r.answer = f
	r.mu.Unlock()
}

// env is a merchant whose payout webhook is the receiver, with the real
// worker delivering on the test's Redis under a short retry schedule.
type env struct {
	t         *testing.T
	db        *gorm.DB
	svc       *payouts.Service
	deliverer *webhooks.Deliverer
	admin     admin.Deps
	creds     *admin.IssuedCredentials
	client    *models.Client
	wallet    uuid.UUID
	inspector *asynq.Inspector
	queue     string
}

var shortSchedule = webhooks.Schedule{Base: 20 * time.Millisecond, Cap: 80 * time.Millisecond, Window: 250 * time.Millisecond}

func newEnv(t *testing.T, webhookURL string) *env {
	t.Helper()
	db := testenv.DB(t)
	rdb, _ := testenv.Redis(t)
	opt, prefix := testenv.Queue(t, rdb)
	key := make([]byte, 32)
	rand.Read(key)
	sealer, _ := credentials.NewSealer(key)
	registry := sandbox.Registry(sandbox.Options{CompleteAfter: time.Nanosecond})
	deps := admin.Deps{DB: db, Sealer: sealer, Env: models.Staging, Vendors: registry}
	creds, err := admin.CreateClient(context.Background(), deps, admin.ClientOptions{Name: "Toko", PayoutWebhookURL: webhookURL})
	if err != nil {
		t.Fatal(err)
	}
	w, err := admin.CreateWallet(context.Background(), deps, admin.WalletOptions{ClientID: uuid.MustParse(creds.ClientID), Name: "Main", Vendor: "simbank"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.AdjustWallet(context.Background(), deps, uuid.MustParse(w.WalletID), "1000000", "funding"); err != nil {
		t.Fatal(err)
	}
	queue := tasks.NewPrefixedClient(opt, prefix)
	t.Cleanup(func() { queue.Close() })
	svc, dispatcher := dispatch.New(payouts.Options{DB: db, Vendors: registry, Queue: queue}, dispatch.Options{Queue: queue})
	e := &env{t: t, db: db, admin: deps, creds: creds, wallet: uuid.MustParse(w.WalletID),
		svc:       svc,
		deliverer: webhooks.New(webhooks.Options{DB: db, Sealer: sealer, Timeout: 150 * time.Millisecond, Schedule: shortSchedule, Queue: queue}),
		inspector: asynq.NewInspector(opt), queue: prefix + tasks.QueueDefault}
	t.Cleanup(func() { e.inspector.Close() })
	e.client, _ = models.NewStore(db).FindClient(context.Background(), uuid.MustParse(creds.ClientID))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- worker.Run(ctx, worker.Deps{DB: db, Redis: opt, Dispatch: dispatcher, Webhooks: e.deliverer, QueuePrefix: prefix, Concurrency: 4})
	}()
	t.Cleanup(func() { cancel(); <-done })
	return e
}

// payout creates a disbursement to account and returns its id.
func (e *env) payout(account, reference string) uuid.UUID {
	e.t.Helper()
	req := payouts.CreateRequest{IdempotencyKey: uuid.NewString(), Params: payouts.Params{WalletID: e.wallet,
		Amount: models.Rupiah(100_000), BankCode: "bca", AccountNo: account, TransferType: models.BIFAST}}
	if reference != "" {
		req.ReferenceID = &reference
	}
	created, err := e.svc.Create(context.Background(), e.client, req)
	if err != nil {
		e.t.Fatal(err)
	}
	return created.Disbursement.ID
}

// eventOf waits for the webhook event of a disbursement to reach state.
func (e *env) eventOf(subject uuid.UUID, state models.WebhookState) models.WebhookEvent {
	e.t.Helper()
	var ev models.WebhookEvent
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		ev = models.WebhookEvent{}
		e.db.Where("subject_id = ?", subject).Take(&ev)
		if ev.State == state {
			return ev
		}
	}
	e.t.Fatalf("event of %s is %q after %d attempts, want %s", subject, ev.State, ev.Attempts, state)
	return ev
}

func (e *env) attempts(id uuid.UUID) []models.WebhookAttempt {
	e.t.Helper()
	out, err := e.deliverer.Attempts(context.Background(), id)
	if err != nil {
		e.t.Fatal(err)
	}
	return out
}

// A receiver failing the first three attempts gets the event a fourth
// time; four attempts are recorded, each signed over the exact body with
// the client's Callback Secret, all with the same event id.
func TestDeliveryRetriedUntilTheReceiverRecovers(t *testing.T) {
	t.Parallel()
	r := newReceiver(t, func(n int) int {
		if n <= 3 {
			return http.StatusInternalServerError
		}
		return http.StatusNoContent
	})
	e := newEnv(t, r.server.URL+"/hooks")
	id := e.payout("1234567890", "inv-9")
	ev := e.eventOf(id, models.WebhookDelivered)
	attempts := e.attempts(ev.ID)
	if len(attempts) != 4 || ev.Attempts != 4 {
		t.Fatalf("%d attempts recorded (event says %d), want 4", len(attempts), ev.Attempts)
	}
	for i, a := range attempts {
		want := http.StatusInternalServerError
		if i == 3 {
			want = http.StatusNoContent
		}
		if a.StatusCode == nil || *a.StatusCode != want || a.Attempt != i+1 {
			t.Errorf("attempt %d: %+v, want status %d", i+1, a, want)
		}
		if (i < 3) != (a.NextAttemptAt != nil) {
			t.Errorf("attempt %d: next_attempt_at %v", i+1, a.NextAttemptAt)
		}
	}
	// The event is stamped delivered when the attempt that got the 2xx
	// started, and waits for no further attempt.
	if ev.DeliveredAt == nil || !ev.DeliveredAt.Equal(attempts[3].StartedAt) || ev.NextAttemptAt != nil {
		t.Errorf("delivered event: delivered_at %v (the last attempt started %v), next_attempt_at %v",
			ev.DeliveredAt, attempts[3].StartedAt, ev.NextAttemptAt)
	}
	got := r.got()
	if len(got) != 4 {
		t.Fatalf("receiver got %d requests, want 4", len(got))
	}
	for _, req := range got {
		if req.header.Get("x-event-id") != ev.ID.String() || string(req.body) != ev.Body {
			t.Fatalf("delivery carried event %q body %s", req.header.Get("x-event-id"), req.body)
		}
		v := signature.Verify(e.creds.CallbackSecret, req.header.Get("x-callback-signature"), req.body, time.Now())
		if v.Diagnosis != signature.OK {
			t.Fatalf("signature: %s", v.Diagnosis)
		}
	}
	var body map[string]any
	json.Unmarshal(got[0].body, &body)
	data := body["data"].(map[string]any)
	if body["event"] != "disbursement.success" || body["eventId"] != ev.ID.String() || data["disbursementId"] != id.String() ||
		data["status"] != "SUCCESS" || data["amount"] != "100000" || data["platformFee"] != "2500" || data["netAmount"] != "97500" ||
		data["referenceId"] != "inv-9" || data["accountHolderName"] != "SANDBOX 7890" || data["completedAt"] == nil {
		t.Fatalf("body %s", got[0].body)
	}
	if _, ok := data["failedReason"]; !ok {
		t.Fatal("failedReason must be present (null) on success")
	}
}

// A receiver that never answers: each attempt times out and is retried.
func TestDeliveryTimeoutsAreRetried(t *testing.T) {
	t.Parallel()
	r := newReceiver(t, func(n int) int {
		if n <= 2 {
			return 0
		}
		return http.StatusOK
	})
	e := newEnv(t, r.server.URL)
	ev := e.eventOf(e.payout("1234567890", ""), models.WebhookDelivered)
	attempts := e.attempts(ev.ID)
	if len(attempts) != 3 {
		t.Fatalf("%d attempts, want 3", len(attempts))
	}
	for _, a := range attempts[:2] {
		if a.StatusCode != nil || a.Error == nil || !strings.Contains(strings.ToLower(*a.Error), "timeout") {
			t.Fatalf("a hanging receiver's attempt recorded as %+v (error %v)", a, a.Error)
		}
	}
	var body map[string]any
	json.Unmarshal([]byte(ev.Body), &body)
	if _, has := body["data"].(map[string]any)["referenceId"]; has {
		t.Fatal("referenceId present although none was supplied")
	}
}

// A receiver answering 410 forever: after the schedule the event is failed,
// its task archived in the queue, and operators see it; a redelivery once
// the receiver is back marks it delivered.
func TestDeliveryArchivedAfterTheScheduleThenRedelivered(t *testing.T) {
	t.Parallel()
	r := newReceiver(t, func(int) int { return http.StatusGone })
	e := newEnv(t, r.server.URL)
	id := e.payout("1000000003", "") // rejected by the vendor: disbursement.failed
	ev := e.eventOf(id, models.WebhookFailed)
	if ev.Event != webhooks.DisbursementFailed || ev.Attempts < 3 {
		t.Fatalf("event %s after %d attempts", ev.Event, ev.Attempts)
	}
	var archived []*asynq.TaskInfo
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		archived, _ = e.inspector.ListArchivedTasks(e.queue)
		if len(archived) > 0 {
			break
		}
	}
	if len(archived) != 1 || archived[0].Type != tasks.TypeWebhookDeliver {
		t.Fatalf("archived tasks %v, want the webhook:deliver task", archived)
	}
	list, err := e.deliverer.List(context.Background(), e.client.ID, 10)
	if err != nil || len(list) != 1 || list[0].State != models.WebhookFailed || list[0].LastAttempt == nil ||
		*list[0].LastAttempt.StatusCode != http.StatusGone {
		t.Fatalf("operators see %+v (%v)", list, err)
	}

	r.setAnswer(func(int) int { return http.StatusOK })
	before := len(r.got())
	done, err := e.deliverer.Redeliver(context.Background(), ev.ID)
	if err != nil {
		t.Fatal(err)
	}
	if done.Event.State != models.WebhookDelivered || *done.Attempt.StatusCode != http.StatusOK || done.Attempt.Attempt != ev.Attempts+1 {
		t.Fatalf("redelivery: %+v", done)
	}
	if len(r.got()) != before+1 {
		t.Fatalf("redelivery sent %d requests", len(r.got())-before)
	}
}

// After rotate-credentials the old credential is revoked but kept: a
// delivery is signed with the new Callback Secret only.
func TestDeliverySignedWithTheLiveCallbackSecret(t *testing.T) {
	t.Parallel()
	r := newReceiver(t, func(int) int { return http.StatusOK })
	e := newEnv(t, r.server.URL+"/hooks")
	rotated, err := admin.RotateCredentials(context.Background(), e.admin, e.client.ID)
	if err != nil {
		t.Fatal(err)
	}
	e.eventOf(e.payout("1234567890", ""), models.WebhookDelivered)
	got := r.got()
	if len(got) != 1 {
		t.Fatalf("receiver got %d requests, want 1", len(got))
	}
	header := got[0].header.Get("x-callback-signature")
	if v := signature.Verify(rotated.CallbackSecret, header, got[0].body, time.Now()); v.Diagnosis != signature.OK {
		t.Errorf("not signed with the new callback secret: %s", v.Diagnosis)
	}
	if v := signature.Verify(e.creds.CallbackSecret, header, got[0].body, time.Now()); v.Diagnosis == signature.OK {
		t.Error("signed with the revoked callback secret")
	}
}

// A client without a payout webhook URL has its events stored, not sent.
func TestEventsOfAClientWithoutURLAreStored(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "")
	ev := e.eventOf(e.payout("1234567890", ""), models.WebhookNoURL)
	if len(e.attempts(ev.ID)) != 0 || ev.Body == "" {
		t.Fatalf("event %+v", ev)
	}
}

// The SSRF guard: in production a URL resolving to 127.0.0.1 is refused at
// connect time (the receiver never hears of it); in staging it is allowed.
func TestGuardRefusesLoopbackInProductionAllowsItInStaging(t *testing.T) {
	t.Parallel()
	r := newReceiver(t, func(int) int { return http.StatusOK })
	tlsReceiver := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		t.Error("the production guard let a delivery reach 127.0.0.1")
	}))
	t.Cleanup(tlsReceiver.Close)
	port := tlsReceiver.URL[strings.LastIndex(tlsReceiver.URL, ":"):]
	for _, tc := range []struct {
		name  string
		guard webhooks.Guard
		url   string
		want  models.WebhookState
	}{
		{"production, a name resolving to 127.0.0.1", webhooks.ProductionGuard(nil), "https://localhost" + port + "/hooks", models.WebhookPending},
		{"production, the address itself", webhooks.ProductionGuard(nil), tlsReceiver.URL + "/hooks", models.WebhookPending},
		{"staging", webhooks.Guard{}, r.server.URL + "/hooks", models.WebhookDelivered},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := testenv.DB(t)
			key := make([]byte, 32)
			rand.Read(key)
			sealer, _ := credentials.NewSealer(key)
			deps := admin.Deps{DB: db, Sealer: sealer, Env: models.Staging, Vendors: sandbox.Registry(sandbox.Options{})}
			creds, err := admin.CreateClient(context.Background(), deps, admin.ClientOptions{Name: "Toko", PayoutWebhookURL: tc.url})
			if err != nil {
				t.Fatal(err)
			}
			var ev *models.WebhookEvent
			err = db.Transaction(func(tx *gorm.DB) error {
				ev, err = webhooks.Record(tx, webhooks.NewEvent{ClientID: uuid.MustParse(creds.ClientID), Event: webhooks.DisbursementSuccess,
					SubjectID: uuid.New(), Target: models.TargetPayout, Data: map[string]string{"status": "SUCCESS"}}, time.Now())
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			d := webhooks.New(webhooks.Options{DB: db, Sealer: sealer, Guard: tc.guard, Timeout: time.Second, Schedule: shortSchedule})
			d.Deliver(context.Background(), ev.ID)
			var after models.WebhookEvent
			db.Where("id = ?", ev.ID).Take(&after)
			if after.State != tc.want {
				t.Fatalf("state %s, want %s", after.State, tc.want)
			}
			attempts, _ := d.Attempts(context.Background(), ev.ID)
			if len(attempts) != 1 {
				t.Fatalf("%d attempts", len(attempts))
			}
			// The guard's own words: "connection refused" must not pass.
			if msg := ""; tc.want == models.WebhookPending {
				if attempts[0].Error != nil {
					msg = *attempts[0].Error
				}
				if !strings.Contains(msg, webhooks.ErrBlockedDestination.Error()+": ") ||
					!strings.Contains(msg, " is a loopback, link-local, private or reserved address") {
					t.Fatalf("attempt error %q, want the guard's refusal", msg)
				}
			}
		})
	}
}

// Events of one subject go out in order: a later event waits while an
// earlier one is pending.
func TestEventsOfOneSubjectInOrder(t *testing.T) {
	t.Parallel()
	r := newReceiver(t, func(int) int { return http.StatusOK })
	db := testenv.DB(t)
	key := make([]byte, 32)
	rand.Read(key)
	sealer, _ := credentials.NewSealer(key)
	deps := admin.Deps{DB: db, Sealer: sealer, Env: models.Staging, Vendors: sandbox.Registry(sandbox.Options{})}
	creds, err := admin.CreateClient(context.Background(), deps, admin.ClientOptions{Name: "Toko", PayoutWebhookURL: r.server.URL})
	if err != nil {
		t.Fatal(err)
	}
	subject := uuid.New()
	var first, second *models.WebhookEvent
	for _, ev := range []**models.WebhookEvent{&first, &second} {
		err := db.Transaction(func(tx *gorm.DB) (err error) {
			*ev, err = webhooks.Record(tx, webhooks.NewEvent{ClientID: uuid.MustParse(creds.ClientID), Event: webhooks.DisbursementFailed,
				SubjectID: subject, Target: models.TargetPayout, Data: map[string]string{}}, time.Now())
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if first.Sequence != 1 || second.Sequence != 2 {
		t.Fatalf("sequences %d, %d", first.Sequence, second.Sequence)
	}
	d := webhooks.New(webhooks.Options{DB: db, Sealer: sealer, Schedule: shortSchedule})
	var later *webhooks.RetryLater
	if err := d.Deliver(context.Background(), second.ID); !errors.As(err, &later) {
		t.Fatalf("the second event before the first: %v, want RetryLater", err)
	}
	if len(r.got()) != 0 {
		t.Fatal("the second event was sent before the first")
	}
	if err := d.Deliver(context.Background(), first.ID); err != nil {
		t.Fatal(err)
	}
	if err := d.Deliver(context.Background(), second.ID); err != nil {
		t.Fatal(err)
	}
	got := r.got()
	if len(got) != 2 || got[0].header.Get("x-event-id") != first.ID.String() || got[1].header.Get("x-event-id") != second.ID.String() {
		t.Fatalf("received %d events out of order", len(got))
	}
}
