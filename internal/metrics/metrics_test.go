package metrics

import (
	"context"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/payoutd/payoutd/internal/testenv"
)

// A vendor call counts under its vendor, call and outcome (the values of
// vendors.CallObserver's arguments, passed through as labels).
func TestVendorCalls(t *testing.T) {
	m := New()
	m.VendorCall("simbank", "submit", "rejected")
	m.VendorCall("simbank", "submit", "rejected")
	m.VendorCall("simbank", "status", "unknown_payout")
	if n := testutil.ToFloat64(m.vendorCalls.WithLabelValues("simbank", "submit", "rejected")); n != 2 {
		t.Errorf("simbank submit rejected counted %v times, want 2", n)
	}
	if n := testutil.CollectAndCount(m.vendorCalls); n != 2 {
		t.Errorf("%d vendor call series, want 2", n)
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

func TestWebhookAttempts(t *testing.T) {
	m := New()
	m.WebhookAttempt("disbursement.success", "retry", 20*time.Millisecond)
	m.WebhookAttempt("disbursement.success", "delivered", 30*time.Millisecond)
	m.WebhookAttempt("disbursement.success", WebhookBlocked, 0)
	for _, outcome := range []string{"retry", "delivered", WebhookBlocked} {
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

// A nil *Metrics records nothing. Every sink method is called on it: a
// caller that hands the domain packages a nil *Metrics (internal/app for
// the admin commands) gives them a non-nil interface, which they call
// without a check, so no method may dereference a nil receiver (the
// calls through those interfaces: internal/app's tests).
func TestNilMetrics(t *testing.T) {
	var m *Metrics
	m.HTTPRequest("GET", "/", 200, time.Millisecond)
	m.DisbursementTransition("", "VERIFIED")
	m.DisbursementLateResult("simbank", "SUCCESS", "FAILED")
	m.PaymentTransition("PENDING", "SUCCESS")
	m.WebhookAttempt("payment.success", "delivered", time.Millisecond)
	m.WebhookAttempt("payment.success", WebhookBlocked, 0)
	m.GroupRun("create", 3, time.Millisecond)
	m.VendorCall("simbank", "status", "ok")
	m.BreakerTransition("simbank", "closed", "open")
	if err := m.CollectBreakers(nil); err != nil {
		t.Error(err)
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
