package webhooks_test

import (
	"context"
	"crypto/rand"
	"errors"
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
	"github.com/payoutd/payoutd/internal/credentials"
	"github.com/payoutd/payoutd/internal/testenv"
	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/payouts"
	"github.com/payoutd/payoutd/tasks"
	"github.com/payoutd/payoutd/vendors/sandbox"
	"github.com/payoutd/payoutd/webhooks"
)

// merchant is a client whose payout webhook URL is given, on a database of
// its own, for tests that drive Deliver themselves.
type merchant struct {
	t      *testing.T
	db     *gorm.DB
	sealer *credentials.Sealer
	deps   admin.Deps
	id     uuid.UUID
}

func newMerchant(t *testing.T, url string) *merchant {
	t.Helper()
	db := testenv.DB(t)
	key := make([]byte, 32)
	rand.Read(key)
	sealer, _ := credentials.NewSealer(key)
	deps := admin.Deps{DB: db, Sealer: sealer, Env: models.Staging, Vendors: sandbox.Registry(sandbox.Options{})}
	creds, err := admin.CreateClient(context.Background(), deps, admin.ClientOptions{Name: "Toko", PayoutWebhookURL: url})
	if err != nil {
		t.Fatal(err)
	}
	return &merchant{t: t, db: db, sealer: sealer, deps: deps, id: uuid.MustParse(creds.ClientID)}
}

// record records an event about subject, as a state change at would.
func (m *merchant) record(subject uuid.UUID, at time.Time) *models.WebhookEvent {
	m.t.Helper()
	var ev *models.WebhookEvent
	err := m.db.Transaction(func(tx *gorm.DB) (err error) {
		ev, err = webhooks.Record(tx, webhooks.NewEvent{ClientID: m.id, Event: webhooks.DisbursementSuccess,
			SubjectID: subject, Target: models.TargetPayout, Data: map[string]string{"status": "SUCCESS"}}, at)
		return err
	})
	if err != nil {
		m.t.Fatal(err)
	}
	return ev
}

func (m *merchant) deliverer(o webhooks.Options) *webhooks.Deliverer {
	o.DB, o.Sealer = m.db, m.sealer
	return webhooks.New(o)
}

// event reads an event as stored now.
func (m *merchant) event(id uuid.UUID) models.WebhookEvent {
	m.t.Helper()
	var ev models.WebhookEvent
	if err := m.db.Where("id = ?", id).Take(&ev).Error; err != nil {
		m.t.Fatal(err)
	}
	return ev
}

// clock is a test clock moved by hand.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Now().UTC()} }

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

func (c *clock) advance(d time.Duration) { c.set(c.now().Add(d)) }

// queueLog is a Queue that keeps what was enqueued.
type queueLog struct {
	mu  sync.Mutex
	got []string // "<event id> <slot>"
}

func (q *queueLog) EnqueueWebhook(_ context.Context, id uuid.UUID, slot string) error {
	q.mu.Lock()
	q.got = append(q.got, id.String()+" "+slot)
	q.mu.Unlock()
	return nil
}

func (q *queueLog) enqueued() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]string(nil), q.got...)
}

// hourly retries after about an hour: a retry is never due within a test.
var hourly = webhooks.Schedule{Base: time.Hour, Cap: time.Hour, Window: 24 * time.Hour}

// Two deliveries of one event at the same time (a task that ran late and
// the sweep's copy of it): the merchant gets the event once, and one
// attempt is recorded, so the retry schedule is not run twice.
func TestConcurrentDeliveriesOfOneEventSendOnce(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		time.Sleep(100 * time.Millisecond) // every delivery has read the event before one is recorded
		w.WriteHeader(http.StatusInternalServerError)
	}))
	t.Cleanup(slow.Close)
	m := newMerchant(t, slow.URL)
	ev := m.record(uuid.New(), time.Now())
	d := m.deliverer(webhooks.Options{Timeout: 2 * time.Second, Schedule: hourly})

	const deliveries = 6
	errs := make(chan error, deliveries)
	var start sync.WaitGroup
	start.Add(1)
	for range deliveries {
		go func() {
			start.Wait()
			errs <- d.Deliver(context.Background(), ev.ID)
		}()
	}
	start.Done()
	retries := 0
	for range deliveries {
		err := <-errs
		var later *webhooks.RetryLater
		switch {
		case errors.As(err, &later):
			retries++
		case err != nil:
			t.Errorf("deliver: %v", err)
		}
	}
	if n := hits.Load(); n != 1 {
		t.Fatalf("the merchant got the event %d times from %d concurrent deliveries, want once", n, deliveries)
	}
	attempts, _ := d.Attempts(context.Background(), ev.ID)
	after := m.event(ev.ID)
	if len(attempts) != 1 || attempts[0].Attempt != 1 || after.Attempts != 1 || retries != 1 {
		t.Fatalf("%d attempts recorded, event counts %d, %d deliveries asked for a retry; want 1, 1, 1", len(attempts), after.Attempts, retries)
	}
	if after.State != models.WebhookPending || after.NextAttemptAt == nil || time.Until(*after.NextAttemptAt) < 30*time.Minute {
		t.Fatalf("event %s next at %v, want pending for the retry in about an hour", after.State, after.NextAttemptAt)
	}
}

// A task that runs long before the event's next attempt (a stale copy)
// sends nothing; one that runs a moment early, as asynq's whole-second
// retry times allow, waits and sends on time.
func TestDeliveryBeforeTheEventIsDue(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var arrivals []time.Time
	r := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		arrivals = append(arrivals, time.Now())
		mu.Unlock()
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(r.Close)
	got := func() []time.Time { mu.Lock(); defer mu.Unlock(); return append([]time.Time(nil), arrivals...) }

	t.Run("long before", func(t *testing.T) {
		m := newMerchant(t, r.URL)
		ev := m.record(uuid.New(), time.Now())
		d := m.deliverer(webhooks.Options{Timeout: time.Second, Schedule: hourly})
		var later *webhooks.RetryLater
		if err := d.Deliver(context.Background(), ev.ID); !errors.As(err, &later) {
			t.Fatalf("first attempt: %v, want a retry", err)
		}
		before := len(got())
		if err := d.Deliver(context.Background(), ev.ID); err != nil {
			t.Fatalf("a task an hour early: %v, want nil (nothing to do)", err)
		}
		if sent := len(got()) - before; sent != 0 || m.event(ev.ID).Attempts != 1 {
			t.Fatalf("a task an hour before the retry was due sent %d requests (%d attempts recorded)", sent, m.event(ev.ID).Attempts)
		}
	})
	t.Run("a moment before", func(t *testing.T) {
		m := newMerchant(t, r.URL)
		ev := m.record(uuid.New(), time.Now())
		d := m.deliverer(webhooks.Options{Timeout: time.Second, Schedule: webhooks.Schedule{Base: time.Second, Cap: time.Second, Window: time.Hour}})
		d.Deliver(context.Background(), ev.ID)
		due := *m.event(ev.ID).NextAttemptAt
		before := len(got())
		d.Deliver(context.Background(), ev.ID) // at once, up to 1.2 s early
		arrived := got()
		if len(arrived) != before+1 || arrived[len(arrived)-1].Before(due) {
			t.Fatalf("the retry due at %s was sent %d times, last at %v", due.Format(time.StampMicro), len(arrived)-before, arrived)
		}
		if a := m.event(ev.ID).Attempts; a != 2 {
			t.Fatalf("%d attempts, want 2", a)
		}
	})
}

// A later event of a subject waits for the earlier one without spending
// its own attempts or retry budget: it is held until just after the
// earlier one's next attempt (so the sweep does not re-enqueue it every
// minute), and the earlier one's delivery wakes it at once. The merchant
// gets them in order.
func TestHeldEventWaitsWithoutSpendingAttempts(t *testing.T) {
	t.Parallel()
	r := newReceiver(t, func(n int) int {
		if n == 1 {
			return http.StatusInternalServerError
		}
		return http.StatusNoContent
	})
	m := newMerchant(t, r.server.URL)
	clk := newClock()
	subject := uuid.New()
	first, second := m.record(subject, clk.now()), m.record(subject, clk.now())
	queue := &queueLog{}
	d := m.deliverer(webhooks.Options{Timeout: time.Second, Schedule: hourly, Queue: queue, Now: clk.now})
	ctx := context.Background()

	var later *webhooks.RetryLater
	if err := d.Deliver(ctx, second.ID); !errors.As(err, &later) {
		t.Fatalf("the second event before the first: %v, want held", err)
	}
	if err := d.Deliver(ctx, first.ID); !errors.As(err, &later) {
		t.Fatalf("the first event's failing attempt: %v, want a retry", err)
	}
	firstRetry := *m.event(first.ID).NextAttemptAt
	clk.advance(3 * time.Second) // the second's task comes back
	if err := d.Deliver(ctx, second.ID); !errors.As(err, &later) || later.Delay < 30*time.Minute {
		t.Fatalf("the second event while the first waits for its retry: %v, want held until after it", err)
	}
	held := m.event(second.ID)
	if held.Attempts != 0 || held.NextAttemptAt == nil || !held.NextAttemptAt.After(firstRetry) {
		t.Fatalf("held event: %d attempts, next at %v; want 0 attempts, next after the first's retry at %s", held.Attempts, held.NextAttemptAt, firstRetry)
	}
	clk.advance(40 * time.Minute) // before the first's retry (48 to 72 minutes)
	if n, err := d.Sweep(ctx); err != nil || n != 0 {
		t.Fatalf("the sweep re-enqueued %d events (%v): a held event is not overdue", n, err)
	}
	if len(r.got()) != 1 {
		t.Fatalf("%d requests while the first event waits for its retry, want 1", len(r.got()))
	}

	clk.set(firstRetry.Add(time.Millisecond))
	if err := d.Deliver(ctx, first.ID); err != nil {
		t.Fatalf("the first event's retry: %v", err)
	}
	if q := queue.enqueued(); len(q) != 1 || q[0] != second.ID.String()+" after-"+first.ID.String() {
		t.Fatalf("enqueued %v, want the held second event woken by the first's delivery", q)
	}
	if err := d.Deliver(ctx, second.ID); err != nil {
		t.Fatalf("the second event once the first is delivered: %v", err)
	}
	var order []string
	for _, req := range r.got() {
		order = append(order, req.header.Get(webhooks.EventIDHeader))
	}
	if want := []string{first.ID.String(), first.ID.String(), second.ID.String()}; strings.Join(order, ",") != strings.Join(want, ",") {
		t.Fatalf("the merchant got %v, want %v", order, want)
	}
	if after := m.event(second.ID); after.State != models.WebhookDelivered || after.Attempts != 1 {
		t.Fatalf("second event %s after %d attempts, want delivered at its first", after.State, after.Attempts)
	}
}

// An event whose task was lost is enqueued again by the sweep once, however
// many sweeps run before a worker gets to it, and that copy delivers it.
func TestSweepQueuesOneCopyOfALostTaskAndItDelivers(t *testing.T) {
	t.Parallel()
	r := newReceiver(t, func(int) int { return http.StatusOK })
	m := newMerchant(t, r.server.URL)
	rdb, _ := testenv.Redis(t)
	opt, prefix := testenv.Queue(t, rdb)
	queue := tasks.NewPrefixedClient(opt, prefix)
	t.Cleanup(func() { queue.Close() })
	inspector := asynq.NewInspector(opt)
	t.Cleanup(func() { inspector.Close() })
	clk := newClock()
	ev := m.record(uuid.New(), clk.now()) // its task never made it to Redis
	d := m.deliverer(webhooks.Options{Timeout: time.Second, Queue: queue, Now: clk.now})

	for range 3 {
		clk.advance(2 * time.Minute)
		if _, err := d.Sweep(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	pending, err := inspector.ListPendingTasks(prefix + tasks.QueueDefault)
	if err != nil {
		t.Fatal(err)
	}
	if len(pending) != 1 || pending[0].Type != tasks.TypeWebhookDeliver {
		t.Fatalf("%d tasks queued after three sweeps, want one webhook:deliver", len(pending))
	}
	if err := d.Deliver(context.Background(), ev.ID); err != nil {
		t.Fatal(err)
	}
	if len(r.got()) != 1 || m.event(ev.ID).State != models.WebhookDelivered {
		t.Fatalf("the sweep's copy sent %d requests, event %s", len(r.got()), m.event(ev.ID).State)
	}
}

// A status change and its event commit together: when recording the
// event fails, the payout does not move either (its funds stay locked,
// nobody is told it failed), and once recording works again it moves with
// exactly one event.
func TestStatusChangeRollsBackWithItsEvent(t *testing.T) {
	t.Parallel()
	m := newMerchant(t, "https://merchant.example/hooks")
	w, err := admin.CreateWallet(context.Background(), m.deps, admin.WalletOptions{ClientID: m.id, Name: "Main", Vendor: "simbank"})
	if err != nil {
		t.Fatal(err)
	}
	wallet := uuid.MustParse(w.WalletID)
	if _, err := admin.AdjustWallet(context.Background(), m.deps, wallet, "1000000", "funding"); err != nil {
		t.Fatal(err)
	}
	client, _ := models.NewStore(m.db).FindClient(context.Background(), m.id)
	// The clock moves past the first attempt's lease before the second
	// submit, which asks the vendor and may then submit again.
	var ahead atomic.Int64
	clock := func() time.Time { return models.Now().Add(time.Duration(ahead.Load())) }
	svc := payouts.New(payouts.Options{DB: m.db, Vendors: sandbox.Registry(sandbox.Options{}), SubmitLease: time.Minute, Now: clock})
	created, err := svc.Create(context.Background(), client, payouts.CreateRequest{IdempotencyKey: "k1", Params: payouts.Params{WalletID: wallet,
		Amount: models.Rupiah(100_000), BankCode: "bca", AccountNo: "1000000003", TransferType: models.BIFAST}}) // rejected on submit
	if err != nil {
		t.Fatal(err)
	}
	id := created.Disbursement.ID
	state := func() (models.DisbursementStatus, int64, int64) {
		t.Helper()
		var d models.Disbursement
		var locked, events int64
		if err := m.db.Where("id = ?", id).Take(&d).Error; err != nil {
			t.Fatal(err)
		}
		m.db.Raw("SELECT locked FROM wallets WHERE id = ?", wallet).Scan(&locked)
		m.db.Model(&models.WebhookEvent{}).Where("subject_id = ?", id).Count(&events)
		return d.Status, locked, events
	}
	before, lockedBefore, _ := state()

	// The webhook table out of reach makes Record fail inside the transition.
	if err := m.db.Exec("ALTER TABLE webhook_events RENAME TO webhook_events_away").Error; err != nil {
		t.Fatal(err)
	}
	if err := svc.Submit(context.Background(), id); err == nil {
		t.Fatal("the payout moved although its event could not be recorded")
	}
	if err := m.db.Exec("ALTER TABLE webhook_events_away RENAME TO webhook_events").Error; err != nil {
		t.Fatal(err)
	}
	if status, locked, events := state(); status != before || locked != lockedBefore || events != 0 {
		t.Fatalf("after a failed Record: %s with %d locked and %d events, want %s with %d locked and none", status, locked, events, before, lockedBefore)
	}
	var moved int64
	m.db.Raw("SELECT COUNT(*) FROM disbursement_transitions WHERE disbursement_id = ? AND to_status = ?", id, models.StatusFailed).Scan(&moved)
	if moved != 0 {
		t.Fatal("the audit trail records a move that did not happen")
	}

	ahead.Store(int64(2 * time.Minute))
	if err := svc.Submit(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	status, locked, events := state()
	if status != models.StatusFailed || locked != lockedBefore-int64(models.Rupiah(100_000)) || events != 1 {
		t.Fatalf("after recording works again: %s with %d locked and %d events, want FAILED, the lock released, one event", status, locked, events)
	}
}

// A receiver that never answers: every attempt times out, and after the
// (compressed) schedule the event is failed and its task archived.
func TestReceiverThatNeverAnswersEndsArchived(t *testing.T) {
	t.Parallel()
	r := newReceiver(t, func(int) int { return 0 })
	e := newEnv(t, r.server.URL)
	ev := e.eventOf(e.payout("1234567890", ""), models.WebhookFailed)
	var archived []*asynq.TaskInfo
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && len(archived) == 0; time.Sleep(20 * time.Millisecond) {
		archived, _ = e.inspector.ListArchivedTasks(e.queue)
	}
	if len(archived) != 1 || archived[0].Type != tasks.TypeWebhookDeliver {
		t.Fatalf("archived tasks %v, want the webhook:deliver task", archived)
	}
	attempts := e.attempts(ev.ID)
	if len(attempts) < 2 || len(attempts) != ev.Attempts || len(r.got()) != len(attempts) {
		t.Fatalf("%d attempts recorded, event counts %d, receiver got %d", len(attempts), ev.Attempts, len(r.got()))
	}
	for i, a := range attempts {
		last := i == len(attempts)-1
		if a.StatusCode != nil || a.Error == nil || !strings.Contains(strings.ToLower(*a.Error), "timeout") || (a.NextAttemptAt == nil) != last {
			t.Fatalf("attempt %d of a receiver that never answers: %+v (error %v)", a.Attempt, a, a.Error)
		}
	}
}

// Each attempt records how long the receiver took to answer.
func TestAttemptLatencyRecorded(t *testing.T) {
	t.Parallel()
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		time.Sleep(150 * time.Millisecond)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(slow.Close)
	m := newMerchant(t, slow.URL)
	ev := m.record(uuid.New(), time.Now())
	d := m.deliverer(webhooks.Options{Timeout: 2 * time.Second})
	if err := d.Deliver(context.Background(), ev.ID); err != nil {
		t.Fatal(err)
	}
	attempts, _ := d.Attempts(context.Background(), ev.ID)
	if len(attempts) != 1 || attempts[0].LatencyMS < 150 || attempts[0].LatencyMS >= 2000 {
		t.Fatalf("attempts %+v, want one with a latency from 150 ms", attempts)
	}
}

// Credentials in a merchant's URL (user:password, a token in the path or
// the query) are sent but never kept: not in the recorded attempt, its
// error, nor the retry reason the worker logs. The attempt shows the URL's
// display form.
func TestAttemptsKeepNoURLCredentials(t *testing.T) {
	t.Parallel()
	r := newReceiver(t, func(int) int { return http.StatusBadGateway })
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close() // connection refused: the error names the URL
	for _, base := range []string{r.server.URL, closed.URL} {
		m := newMerchant(t, strings.Replace(base, "http://", "http://ops:s3cret@", 1)+"/hooks/T0KEN42?sig=abc123")
		ev := m.record(uuid.New(), time.Now())
		d := m.deliverer(webhooks.Options{Timeout: time.Second, Schedule: hourly})
		err := d.Deliver(context.Background(), ev.ID)
		var later *webhooks.RetryLater
		if !errors.As(err, &later) {
			t.Fatalf("%s: %v, want a retry", base, err)
		}
		attempts, _ := d.Attempts(context.Background(), ev.ID)
		if len(attempts) != 1 || attempts[0].Error == nil {
			t.Fatalf("%s: attempts %+v", base, attempts)
		}
		kept := attempts[0].URL + " " + *attempts[0].Error + " " + later.Error()
		leaked := false
		for _, secret := range []string{"s3cret", "ops", "T0KEN42", "abc123"} {
			leaked = leaked || strings.Contains(kept, secret)
		}
		if leaked || attempts[0].URL != strings.Replace(base, "http://", "http://xxxxx@", 1)+"/…" {
			t.Fatalf("%s: kept %q", base, kept)
		}
	}
	if got := r.got(); len(got) != 1 || !strings.HasPrefix(got[0].header.Get("Authorization"), "Basic ") {
		t.Fatalf("the receiver got %d requests without the URL's credentials", len(got))
	}
}

// Events recorded together are numbered per subject in the order given,
// after the subject's events already stored, and each has its own id.
func TestRecordAllNumbersEventsPerSubject(t *testing.T) {
	m := newMerchant(t, "https://merchant.example/hooks")
	one, two := models.NewID(), models.NewID()
	now := time.Now().UTC()
	m.record(one, now)
	event := func(subject uuid.UUID) webhooks.NewEvent {
		return webhooks.NewEvent{ClientID: m.id, Event: webhooks.DisbursementSuccess, SubjectID: subject,
			Target: models.TargetPayout, Data: map[string]string{"status": "SUCCESS"}}
	}
	var got []models.WebhookEvent
	err := m.db.Transaction(func(tx *gorm.DB) (err error) {
		got, err = webhooks.RecordAll(tx, []webhooks.NewEvent{event(one), event(two), event(one)}, now)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		subject  uuid.UUID
		sequence int
	}{{one, 2}, {two, 1}, {one, 3}}
	for i, w := range want {
		if got[i].SubjectID != w.subject || got[i].Sequence != w.sequence || got[i].State != models.WebhookPending {
			t.Errorf("event %d: subject %s sequence %d state %s, want %s %d pending", i, got[i].SubjectID, got[i].Sequence, got[i].State, w.subject, w.sequence)
		}
		if stored := m.event(got[i].ID); stored.Body != got[i].Body || !strings.Contains(stored.Body, got[i].ID.String()) {
			t.Errorf("event %d stored body %q", i, stored.Body)
		}
	}
}

// An event goes to the URL of its target: the merchant has a payout URL
// and no payment URL, so of one batch the payout event is pending (due at
// once) and the payment event kept as no_url, not due; an event of a client
// that does not exist fails the whole record.
func TestRecordAllChoosesTheTargetsURL(t *testing.T) {
	m := newMerchant(t, "https://merchant.example/hooks")
	now := time.Now().UTC()
	payout := webhooks.NewEvent{ClientID: m.id, Event: webhooks.DisbursementSuccess, SubjectID: models.NewID(),
		Target: models.TargetPayout, Data: map[string]string{"status": "SUCCESS"}}
	payment := webhooks.NewEvent{ClientID: m.id, Event: webhooks.PaymentSuccess, SubjectID: models.NewID(),
		Target: models.TargetPayment, Data: map[string]string{"status": "SUCCESS"}}
	var got []models.WebhookEvent
	err := m.db.Transaction(func(tx *gorm.DB) (err error) {
		got, err = webhooks.RecordAll(tx, []webhooks.NewEvent{payout, payment}, now)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []models.WebhookState{models.WebhookPending, models.WebhookNoURL} {
		stored := m.event(got[i].ID)
		if got[i].State != want || stored.State != want || (stored.NextAttemptAt == nil) != (want == models.WebhookNoURL) ||
			(got[i].NextAttemptAt == nil) != (want == models.WebhookNoURL) {
			t.Errorf("event %d: returned %s due %v, stored %s due %v; want %s, due only when pending",
				i, got[i].State, got[i].NextAttemptAt, stored.State, stored.NextAttemptAt, want)
		}
	}
	stranger := payout
	stranger.ClientID, stranger.SubjectID = models.NewID(), models.NewID()
	err = m.db.Transaction(func(tx *gorm.DB) error {
		_, err := webhooks.RecordAll(tx, []webhooks.NewEvent{payout, stranger}, now)
		return err
	})
	if !errors.Is(err, gorm.ErrRecordNotFound) {
		t.Fatalf("an event of an unknown client: %v, want gorm.ErrRecordNotFound", err)
	}
}

// newCountedEvent is a merchant whose receiver counts what it gets, and a
// pending event of it.
func newCountedEvent(t *testing.T) (*merchant, *atomic.Int32, *models.WebhookEvent) {
	t.Helper()
	hits := &atomic.Int32{}
	r := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	t.Cleanup(r.Close)
	m := newMerchant(t, r.URL)
	return m, hits, m.record(uuid.New(), time.Now())
}

// A merchant who removes its webhook URL while an event is pending gets
// nothing more: the event ends no_url with no attempt spent or recorded.
func TestEventOfAURLRemovedMeanwhileEndsWithoutAttempt(t *testing.T) {
	t.Parallel()
	m, hits, ev := newCountedEvent(t)
	if _, err := admin.UpdateClient(context.Background(), m.deps, m.id, map[string]string{"payout-webhook-url": ""}); err != nil {
		t.Fatal(err)
	}
	if err := m.deliverer(webhooks.Options{Schedule: hourly}).Deliver(context.Background(), ev.ID); err != nil {
		t.Fatalf("deliver: %v", err)
	}
	after := m.event(ev.ID)
	attempts, _ := m.deliverer(webhooks.Options{}).Attempts(context.Background(), ev.ID)
	if hits.Load() != 0 || after.State != models.WebhookNoURL || after.Attempts != 0 || len(attempts) != 0 {
		t.Fatalf("sent %d, event %s with %d attempts (%d recorded); want nothing sent, no_url, 0",
			hits.Load(), after.State, after.Attempts, len(attempts))
	}
}

// A Callback Secret that no longer opens (its sealing key dropped) fails
// the task before anything is sent, and the event keeps its attempts and
// stays due: the operator's fix, not the retry budget, decides when it
// goes out.
func TestUnopenableCallbackSecretSpendsNoAttempt(t *testing.T) {
	t.Parallel()
	m, hits, ev := newCountedEvent(t)
	if err := m.db.Exec("UPDATE credentials SET callback_secret_enc = ? WHERE client_id = ?", "v2:unknown:AAAA", m.id).Error; err != nil {
		t.Fatal(err)
	}
	if err := m.deliverer(webhooks.Options{Schedule: hourly}).Deliver(context.Background(), ev.ID); err == nil {
		t.Fatal("deliver with an unopenable Callback Secret succeeded")
	}
	after := m.event(ev.ID)
	attempts, _ := m.deliverer(webhooks.Options{}).Attempts(context.Background(), ev.ID)
	if hits.Load() != 0 || after.State != models.WebhookPending || after.Attempts != 0 || len(attempts) != 0 {
		t.Fatalf("sent %d, event %s with %d attempts (%d recorded); want nothing sent, pending, 0",
			hits.Load(), after.State, after.Attempts, len(attempts))
	}
	if after.NextAttemptAt != nil && time.Until(*after.NextAttemptAt) > 0 {
		t.Fatalf("event next due at %v, want due now", after.NextAttemptAt)
	}
}

// groupSizes is a Metrics that keeps the sizes of the groups that shared a
// statement.
type groupSizes struct {
	mu    sync.Mutex
	sizes map[string][]int
}

func (g *groupSizes) WebhookAttempt(string, string, time.Duration) {}

func (g *groupSizes) GroupRun(group string, size int, _ time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.sizes == nil {
		g.sizes = map[string][]int{}
	}
	g.sizes[group] = append(g.sizes[group], size)
}

func (g *groupSizes) of(group string) (sum, largest int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, n := range g.sizes[group] {
		sum, largest = sum+n, max(largest, n)
	}
	return sum, largest
}

// Two deliveries of one event in one claim statement (a late task and the
// sweep's copy arriving together): one claim, one attempt counted.
func TestOneEventTwiceInAClaimStatementIsClaimedOnce(t *testing.T) {
	t.Parallel()
	m := newMerchant(t, "https://merchant.example/hooks")
	if m.db.Dialector.Name() != "postgres" {
		t.Skip("claims share a statement on PostgreSQL only")
	}
	ev := m.record(uuid.New(), time.Now())
	other := m.record(uuid.New(), time.Now())
	got := m.deliverer(webhooks.Options{}).ClaimTogether(ev.ID, other.ID, ev.ID)
	if !got[0] || !got[1] || got[2] {
		t.Fatalf("claims %v, want the first copy and the other event claimed, the second copy not", got)
	}
	if a := m.event(ev.ID).Attempts; a != 1 {
		t.Fatalf("%d attempts counted, want 1", a)
	}
}

// Outcomes recorded in one statement each find their own event: one an
// operator's redelivery settled meanwhile is left as it is (not settled),
// the others are settled.
func TestOutcomesInOneStatementEachFindTheirEvent(t *testing.T) {
	t.Parallel()
	m := newMerchant(t, "https://merchant.example/hooks")
	if m.db.Dialector.Name() != "postgres" {
		t.Skip("outcomes share a statement on PostgreSQL only")
	}
	events := []*models.WebhookEvent{m.record(uuid.New(), time.Now()), m.record(uuid.New(), time.Now()), m.record(uuid.New(), time.Now())}
	if err := m.db.Exec("UPDATE webhook_events SET state = ? WHERE id = ?", models.WebhookDelivered, events[1].ID).Error; err != nil {
		t.Fatal(err)
	}
	if got := m.deliverer(webhooks.Options{}).RecordTogether(events...); !got[0] || got[1] || !got[2] {
		t.Fatalf("settled %v, want [true false true]", got)
	}
	for i, ev := range events {
		if after := m.event(ev.ID); after.State != models.WebhookDelivered {
			t.Errorf("event %d is %s, want delivered", i, after.State)
		}
	}
}

// Deliveries at the same moment share their claim and outcome statements
// on PostgreSQL, and each event still gets its own outcome: the merchant
// gets every event once; the ones it accepted are delivered and the ones
// it refused wait for their retry, each with one attempt recorded; one
// that an operator's redelivery settled while the attempt was out stays
// as the operator left it; one whose attempt cannot be written fails its
// own task and no other.
func TestConcurrentDeliveriesOfManyEventsEachGetTheirOutcome(t *testing.T) {
	t.Parallel()
	const events = 24
	var (
		m                            *merchant
		ids                          = make([]uuid.UUID, events)
		settledMeanwhile, unwritable uuid.UUID
		mu                           sync.Mutex
		arrived                      = map[uuid.UUID]int{}
		all                          = make(chan struct{})
	)
	refused := func(id uuid.UUID) bool { return id != unwritable && (id == settledMeanwhile || id[15]%2 == 0) }
	r := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		id := uuid.MustParse(req.Header.Get(webhooks.EventIDHeader))
		mu.Lock()
		arrived[id]++
		if len(arrived) == events {
			close(all) // every delivery has claimed and sent: their outcomes come together
		}
		mu.Unlock()
		switch id {
		case settledMeanwhile: // as `payoutd admin webhook redeliver` would
			m.db.Exec("UPDATE webhook_events SET state = ?, delivered_at = ? WHERE id = ?", models.WebhookDelivered, time.Now(), id)
		case unwritable:
			m.db.Exec("INSERT INTO webhook_attempts (event_id, attempt, url, started_at, latency_ms) VALUES (?, 1, 'x', ?, 0)", id, time.Now())
		}
		select {
		case <-all:
		case <-time.After(5 * time.Second):
		}
		if refused(id) {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	t.Cleanup(r.Close)
	m = newMerchant(t, r.URL)
	for i := range ids {
		ids[i] = m.record(uuid.New(), time.Now()).ID
	}
	settledMeanwhile, unwritable = ids[0], ids[1]
	metrics := &groupSizes{}
	d := m.deliverer(webhooks.Options{Timeout: 10 * time.Second, Schedule: hourly, Metrics: metrics})
	errs := make([]error, events)
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Go(func() { errs[i] = d.Deliver(context.Background(), id) })
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	for i, id := range ids {
		ev := m.event(id)
		attempts, _ := d.Attempts(context.Background(), id)
		var later *webhooks.RetryLater
		want, retry := models.WebhookDelivered, false
		if refused(id) && id != settledMeanwhile {
			want, retry = models.WebhookPending, true
		}
		switch {
		case arrived[id] != 1:
			t.Errorf("event %d sent %d times, want once", i, arrived[id])
		case id == unwritable:
			if errs[i] == nil || errors.As(errs[i], &later) || ev.State != models.WebhookPending {
				t.Errorf("event whose attempt cannot be written: %v, %s; want its task failed, pending", errs[i], ev.State)
			}
		case ev.State != want || ev.Attempts != 1 || len(attempts) != 1 || errors.As(errs[i], &later) != retry:
			t.Errorf("event %d: %s with %d attempts (%d recorded), task %v; want %s, 1, a retry %v",
				i, ev.State, ev.Attempts, len(attempts), errs[i], want, retry)
		case want == models.WebhookDelivered && ev.DeliveredAt == nil:
			t.Errorf("delivered event %d has no delivered_at", i)
		case retry && (ev.NextAttemptAt == nil || time.Until(*ev.NextAttemptAt) < 30*time.Minute):
			t.Errorf("refused event %d next at %v, want its retry in about an hour", i, ev.NextAttemptAt)
		}
	}
	if m.db.Dialector.Name() != "postgres" {
		return
	}
	for _, group := range []string{"webhook_claims", "webhook_outcomes"} {
		if _, largest := metrics.of(group); largest < 2 {
			t.Errorf("%s: groups of at most %d; want deliveries sharing statements", group, largest)
		}
	}
}
