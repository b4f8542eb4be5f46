package metrics

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/payoutd/payoutd/internal/testenv"
	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/payments"
	"github.com/payoutd/payoutd/payouts"
	"github.com/payoutd/payoutd/vendors"
	"github.com/payoutd/payoutd/vendors/sandbox"
	"github.com/payoutd/payoutd/vendors/vendorsim"
	"github.com/payoutd/payoutd/vendors/xendit"
	"github.com/payoutd/payoutd/webhooks"
)

func TestVendorCallsCounted(t *testing.T) {
	m := New()
	simbank, err := m.WrapVendors(sandbox.Registry(sandbox.Options{})).Get(sandbox.SimBank)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	payout := vendors.Payout{HolderName: "Budi Santoso", Reference: "ref-rejected", BankCode: "bca", AccountNo: sandbox.AccountSubmitRejected,
		TransferType: models.BIFAST, Amount: models.Rupiah(100_000)}
	if _, err := simbank.Submit(ctx, payout); !errors.Is(err, vendors.ErrRejected) {
		t.Fatalf("Submit = %v, want ErrRejected passed through", err)
	}
	simbank.Inquire(ctx, vendors.InquiryRequest{BankCode: "bca", AccountNo: sandbox.AccountInquiryDown, TransferType: models.BIFAST})
	simbank.Status(ctx, "never-submitted")

	for _, c := range []struct{ call, outcome string }{
		{"submit", "rejected"}, {"inquire", "unavailable"}, {"status", "unknown_payout"},
	} {
		if n := testutil.ToFloat64(m.vendorCalls.WithLabelValues(sandbox.SimBank, c.call, c.outcome)); n != 1 {
			t.Errorf("simbank %s %s counted %v times, want 1", c.call, c.outcome, n)
		}
	}
	if n := testutil.CollectAndCount(m.vendorCalls); n != 3 {
		t.Errorf("%d vendor call series, want 3", n)
	}
	if simbank.Name() != sandbox.SimBank {
		t.Errorf("Name() = %q", simbank.Name())
	}
}

// The wrapper implements the optional interfaces exactly when the vendor
// it wraps does, and delegates to it: callers type-assert them.
func TestWrappedVendorsKeepOptionalInterfaces(t *testing.T) {
	m := New()
	simbank, _ := m.WrapVendors(sandbox.Registry(sandbox.Options{})).Get(sandbox.SimBank)
	if _, ok := simbank.(vendors.Completer); !ok {
		t.Error("wrapped sandbox vendor lost Complete")
	}
	if _, ok := simbank.(vendors.CallbackParser); ok {
		t.Error("wrapped sandbox vendor gained ParseCallback, which it does not have")
	}
	if err := simbank.(vendors.Completer).Complete(context.Background(), "nope", vendors.PayoutSuccess, ""); !errors.Is(err, vendors.ErrUnknownPayout) {
		t.Errorf("Complete(unknown) = %v, want the vendor's ErrUnknownPayout", err)
	}

	simReg, err := vendorsim.NewRegistry("http://127.0.0.1:1", vendorsim.Secrets{Token: "token", CallbackSecret: "callback"}, vendorsim.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sim, _ := m.WrapVendors(simReg).Get(sandbox.SimBank)
	parser, ok := sim.(vendors.CallbackParser)
	if !ok {
		t.Fatal("wrapped HTTP vendor lost ParseCallback")
	}
	if _, ok := sim.(vendors.Completer); !ok {
		t.Error("wrapped HTTP vendor lost Complete")
	}
	if _, err := parser.ParseCallback("/vendor-callbacks/simbank", http.Header{}, []byte(`{}`), time.Now()); !errors.Is(err, vendors.ErrInvalidCallback) {
		t.Errorf("ParseCallback(unsigned) = %v, want the vendor's ErrInvalidCallback", err)
	}

	// Whether the vendor notifies (and so whether its paid payouts are
	// watched for returns) reads the same through the wrapper.
	for token, want := range map[string]bool{"": false, "callback-token": true} {
		x, err := xendit.New(xendit.Options{SecretKey: "xnd_development_k", CallbackToken: token})
		if err != nil {
			t.Fatal(err)
		}
		wrapped, _ := m.WrapVendors(vendors.NewRegistry(x)).Get(xendit.Name)
		if got := vendors.Notifies(wrapped); got != want {
			t.Errorf("wrapped xendit with token %q notifies: %v, want %v", token, got, want)
		}
	}
	if vendors.Notifies(simbank) {
		t.Error("the wrapped in-process sandbox notifies")
	}
}

func TestVendorOutcome(t *testing.T) {
	for err, want := range map[error]string{
		nil: "ok",
		fmt.Errorf("%w: closed", vendors.ErrRejected):        "rejected",
		models.ErrAccountNotResolved:                         "rejected",
		fmt.Errorf("%w: 503", vendors.ErrUnavailable):        "unavailable",
		vendors.ErrUnknownPayout:                             "unknown_payout",
		context.DeadlineExceeded:                             "error",
		fmt.Errorf("wrapped twice: %w", vendors.ErrRejected): "rejected",
	} {
		if got := vendorOutcome(err); got != want {
			t.Errorf("vendorOutcome(%v) = %s, want %s", err, got, want)
		}
	}
}

func TestHTTPLabelsAreBounded(t *testing.T) {
	m := New()
	m.HTTPRequest("GET", "/api/v3/disbursements/:id", 200, time.Millisecond)
	m.HTTPRequest("BREW", "", 404, time.Millisecond)
	if n := testutil.ToFloat64(m.httpRequests.WithLabelValues("GET", "/api/v3/disbursements/:id", "200")); n != 1 {
		t.Errorf("pattern series %v, want 1", n)
	}
	if n := testutil.ToFloat64(m.httpRequests.WithLabelValues("other", UnmatchedRoute, "404")); n != 1 {
		t.Errorf("unknown method and route: %v, want 1 under other/unmatched", n)
	}
}

// The outcome label values are an operator contract (dashboards, alerts):
// webhooks declares them, and they must not change.
func TestWebhookOutcomeLabels(t *testing.T) {
	for got, want := range map[string]string{webhooks.OutcomeDelivered: "delivered", webhooks.OutcomeRetry: "retry",
		webhooks.OutcomeFailed: "failed", webhooks.OutcomeBlocked: "blocked"} {
		if got != want {
			t.Errorf("outcome label %q, want %q", got, want)
		}
	}
}

func TestWebhookAttempts(t *testing.T) {
	m := New()
	m.WebhookAttempt("disbursement.success", webhooks.OutcomeRetry, 20*time.Millisecond)
	m.WebhookAttempt("disbursement.success", webhooks.OutcomeDelivered, 30*time.Millisecond)
	m.WebhookAttempt("disbursement.success", webhooks.OutcomeBlocked, 0)
	for _, outcome := range []string{webhooks.OutcomeRetry, webhooks.OutcomeDelivered, webhooks.OutcomeBlocked} {
		if n := testutil.ToFloat64(m.webhookAttempts.WithLabelValues("disbursement.success", outcome)); n != 1 {
			t.Errorf("%s: %v, want 1", outcome, n)
		}
	}
	// Blocked attempts sent nothing: only the two others are timed.
	families, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == "payoutd_webhook_attempt_duration_seconds" {
			if n := f.GetMetric()[0].GetHistogram().GetSampleCount(); n != 2 {
				t.Errorf("%d attempts timed, want 2", n)
			}
			return
		}
	}
	t.Error("no payoutd_webhook_attempt_duration_seconds")
}

// *Metrics is the sink the domain packages declare.
var (
	_ payouts.Metrics  = (*Metrics)(nil)
	_ payments.Metrics = (*Metrics)(nil)
	_ webhooks.Metrics = (*Metrics)(nil)
)

// A nil *Metrics records nothing and wraps nothing. Every sink method is
// called on it, directly and through the domain packages' interfaces: a
// caller that hands them a nil *Metrics (internal/app for the admin
// commands) gives them a non-nil interface, which they call without a
// check, so no method may dereference a nil receiver.
func TestNilMetrics(t *testing.T) {
	var m *Metrics
	m.HTTPRequest("GET", "/", 200, time.Millisecond)
	m.DisbursementTransition("", "VERIFIED")
	m.DisbursementLateResult("simbank", "SUCCESS", "FAILED")
	m.PaymentTransition("PENDING", "SUCCESS")
	m.WebhookAttempt("payment.success", webhooks.OutcomeDelivered, time.Millisecond)
	m.WebhookAttempt("payment.success", webhooks.OutcomeBlocked, 0)
	m.GroupRun("create", 3, time.Millisecond)

	var po payouts.Metrics = m
	po.GroupRun("move", 2, time.Millisecond)
	po.DisbursementTransition("", "VERIFIED")
	po.DisbursementLateResult("simbank", "SUCCESS", "FAILED")
	var pa payments.Metrics = m
	pa.PaymentTransition("PENDING", "SUCCESS")
	var wh webhooks.Metrics = m
	wh.WebhookAttempt("payment.success", webhooks.OutcomeRetry, time.Millisecond)

	r := sandbox.Registry(sandbox.Options{})
	if got := m.WrapVendors(r); got[sandbox.SimBank] != r[sandbox.SimBank] {
		t.Error("a nil Metrics wrapped the vendors")
	}
}

// The queue collector reports a queue's size and its tasks by state.
func TestQueueCollector(t *testing.T) {
	rdb, _ := testenv.Redis(t)
	opt, prefix := testenv.Queue(t, rdb)
	queue := prefix + "default"
	client := asynq.NewClient(opt)
	t.Cleanup(func() { client.Close() })
	// One task processed and retained (completed), then two pending and
	// one scheduled.
	if _, err := client.Enqueue(asynq.NewTask("test:done", nil), asynq.Queue(queue), asynq.Retention(time.Hour)); err != nil {
		t.Fatal(err)
	}
	srv := asynq.NewServer(opt, asynq.Config{Queues: map[string]int{queue: 1}, Concurrency: 1, LogLevel: asynq.FatalLevel})
	if err := srv.Start(asynq.HandlerFunc(func(context.Context, *asynq.Task) error { return nil })); err != nil {
		t.Fatal(err)
	}
	inspector := asynq.NewInspector(opt)
	t.Cleanup(func() { inspector.Close() })
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if info, err := inspector.GetQueueInfo(queue); err == nil && info.Completed == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the retained task never completed")
		}
	}
	srv.Shutdown()
	for _, opts := range [][]asynq.Option{{asynq.Queue(queue)}, {asynq.Queue(queue)}, {asynq.Queue(queue), asynq.ProcessIn(time.Hour)}} {
		if _, err := client.Enqueue(asynq.NewTask("test:noop", nil), opts...); err != nil {
			t.Fatal(err)
		}
	}
	m := New()
	closeQueues, err := m.CollectQueues(opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeQueues() })

	families, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range families {
		for _, s := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range s.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["queue"] == queue {
				got[f.GetName()+"/"+labels["state"]] = s.GetGauge().GetValue() + s.GetCounter().GetValue()
			}
		}
	}
	want := map[string]float64{"payoutd_queue_size/": 4, "payoutd_queue_tasks/pending": 2, "payoutd_queue_tasks/scheduled": 1,
		"payoutd_queue_tasks/active": 0, "payoutd_queue_tasks/retry": 0, "payoutd_queue_tasks/archived": 0,
		"payoutd_queue_tasks/completed": 1, "payoutd_queue_tasks/aggregating": 0,
		// What asynqmon's graphs query.
		"asynq_queue_size/": 4, "asynq_tasks_enqueued_total/pending": 2, "asynq_tasks_processed_total/": 1, "asynq_tasks_failed_total/": 0}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v (all: %v)", k, got[k], v, got)
		}
	}
	sum := 0.0
	for _, state := range []string{"pending", "active", "scheduled", "retry", "archived", "completed", "aggregating"} {
		sum += got["payoutd_queue_tasks/"+state]
	}
	if sum != got["payoutd_queue_size/"] {
		t.Errorf("payoutd_queue_tasks adds up to %v, the queue's size is %v", sum, got["payoutd_queue_size/"])
	}
	for _, name := range []string{"payoutd_queue_latency_seconds/", "asynq_queue_latency_seconds/", "asynq_queue_memory_usage_approx_bytes/"} {
		if _, ok := got[name]; !ok {
			t.Errorf("no %s for %s", name, queue)
		}
	}
	if _, ok := got["payoutd_queue_latency_seconds/"]; !ok {
		t.Errorf("no payoutd_queue_latency_seconds for %s", queue)
	}

	// A second registration of the queues is refused, not doubled.
	if _, err := m.CollectQueues(opt); err == nil {
		t.Error("registered the queue collector twice")
	}
}
