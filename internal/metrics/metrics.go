// Package metrics holds the service's Prometheus metrics: HTTP requests,
// disbursement and payment transitions, webhook attempts, payout vendor
// calls and the asynq queues, in a registry of their own (with the Go
// runtime and process collectors) served at /metrics.
//
// *Metrics implements the sinks the domain packages declare
// (payouts.Metrics, payments.Metrics, webhooks.Metrics,
// vendors.CallObserver, and the breakers' OnStateChange through
// internal/app), which keep them free of Prometheus; it imports none of
// them, so the sinks' label values are plain strings here. A nil *Metrics
// is valid and records nothing:
// services built without metrics (tests, the admin CLI) pass nil, and a
// nil *Metrics in one of those interfaces is not a nil interface, so every
// method must keep its nil check.
package metrics

import (
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// UnmatchedRoute is the route label of a request no route matched.
const UnmatchedRoute = "unmatched"

// durationBuckets span 1 ms to 10 s: API answers, vendor inquiries and
// webhook attempts (whose timeout defaults to 10 s).
var durationBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// groupDurationBuckets span 0.25 ms to 5 s: a group is one round trip or
// one transaction, usually well under a millisecond when idle.
var groupDurationBuckets = []float64{.00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 5}

// Metrics are the service's metrics and their registry.
type Metrics struct {
	registry                *prometheus.Registry
	httpRequests            *prometheus.CounterVec
	httpDuration            *prometheus.HistogramVec
	disbursementTransitions *prometheus.CounterVec
	paymentTransitions      *prometheus.CounterVec
	webhookAttempts         *prometheus.CounterVec
	webhookDuration         prometheus.Histogram
	vendorCalls             *prometheus.CounterVec
	breakerTransitions      *prometheus.CounterVec
	disbursementLateResults *prometheus.CounterVec
	tasksProcessed          *prometheus.CounterVec
	taskDuration            *prometheus.HistogramVec
	reconcileProblems       prometheus.Gauge
	reconcileLastRun        prometheus.Gauge
	groupSize               *prometheus.HistogramVec
	groupDuration           *prometheus.HistogramVec
}

// New returns the metrics registered in a new registry, with the Go
// runtime and process collectors.
func New() *Metrics {
	m := &Metrics{
		registry: prometheus.NewRegistry(),
		httpRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "payoutd_http_requests_total",
			Help: "HTTP requests served, by method, route pattern (\"unmatched\" when none matched) and status code.",
		}, []string{"method", "route", "code"}),
		httpDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "payoutd_http_request_duration_seconds",
			Help:    "Time to serve an HTTP request, by method and route pattern.",
			Buckets: durationBuckets,
		}, []string{"method", "route"}),
		disbursementTransitions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "payoutd_disbursement_transitions_total",
			Help: "Committed disbursement status changes; a create counts from \"\".",
		}, []string{"from", "to"}),
		paymentTransitions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "payoutd_payment_transitions_total",
			Help: "Committed payment status changes.",
		}, []string{"from", "to"}),
		webhookAttempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "payoutd_webhook_attempts_total",
			Help: "Recorded webhook delivery attempts, by event and outcome (delivered, retry, failed: the last attempt, blocked: refused by the SSRF guard).",
		}, []string{"event", "outcome"}),
		webhookDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "payoutd_webhook_attempt_duration_seconds",
			Help:    "Time a webhook delivery attempt took, from sending to the answer or error; blocked attempts are not timed.",
			Buckets: durationBuckets,
		}),
		vendorCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "payoutd_vendor_calls_total",
			Help: "Payout vendor calls, by vendor, call (inquire, submit, status) and outcome (ok, rejected, unavailable, unknown_payout, error; breaker_open and concurrency_limit: refused before it left, never sent).",
		}, []string{"vendor", "call", "outcome"}),
		breakerTransitions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "payoutd_vendor_breaker_transitions_total",
			Help: "Circuit breaker state changes of this process, by vendor and the states (closed, half-open, open) left and entered.",
		}, []string{"vendor", "from", "to"}),
		disbursementLateResults: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "payoutd_disbursement_late_results_total",
			Help: "Vendor results that contradicted a disbursement's final status (recorded, not applied), by vendor, stored status and reported status; every sighting counts.",
		}, []string{"vendor", "stored", "reported"}),
		tasksProcessed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "payoutd_tasks_processed_total",
			Help: "Queued tasks a worker ran, by task type and outcome (ok, error: asynq retries or archives it).",
		}, []string{"type", "outcome"}),
		reconcileProblems: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "payoutd_reconcile_problems",
			Help: "Problems the last reconciliation this worker ran found (0: the ledger, wallets, locks and vendor accounts agree).",
		}),
		reconcileLastRun: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "payoutd_reconcile_last_run_timestamp_seconds",
			Help: "When this worker last finished a reconciliation (Unix seconds), clean or not.",
		}),
		taskDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "payoutd_task_duration_seconds",
			Help:    "Time a worker took to run a queued task, by task type.",
			Buckets: durationBuckets,
		}, []string{"type"}),
		groupSize: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "payoutd_group_size",
			Help:    "Requests that shared one write, pipeline or query (group commit), by group.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 9), // 1 to 256
		}, []string{"group"}),
		groupDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "payoutd_group_run_duration_seconds",
			Help:    "Time one group's write, pipeline or query took, by group.",
			Buckets: groupDurationBuckets,
		}, []string{"group"}),
	}
	m.registry.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.httpRequests, m.httpDuration, m.disbursementTransitions, m.paymentTransitions,
		m.webhookAttempts, m.webhookDuration, m.vendorCalls, m.breakerTransitions, m.disbursementLateResults,
		m.tasksProcessed, m.taskDuration, m.reconcileProblems, m.reconcileLastRun,
		m.groupSize, m.groupDuration,
	)
	return m
}

// Registry is the registry the metrics are in.
func (m *Metrics) Registry() *prometheus.Registry { return m.registry }

// CollectQueues adds the asynq queues on opt (payoutd_queue_*) to the
// registry; the function returned releases the connection it opened.
func (m *Metrics) CollectQueues(opt asynq.RedisConnOpt) (func() error, error) {
	inspector := asynq.NewInspector(opt)
	if err := m.registry.Register(NewQueueCollector(inspector)); err != nil {
		inspector.Close()
		return nil, err
	}
	return inspector.Close, nil
}

// Handler serves the registry in the Prometheus text format. A collector
// that fails (Redis unreachable) is logged and left out; the rest is served.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{
		ErrorLog:      errorLog{},
		ErrorHandling: promhttp.ContinueOnError,
	})
}

// errorLog sends promhttp's errors to slog.
type errorLog struct{}

func (errorLog) Println(v ...any) {
	slog.Warn("metrics collection: "+fmt.Sprint(v...), slog.String("component", "metrics"))
}

// HTTPRequest records a served request; route is the matched pattern
// ("" when none matched), never the raw path.
func (m *Metrics) HTTPRequest(method, route string, status int, took time.Duration) {
	if m == nil {
		return
	}
	if route == "" {
		route = UnmatchedRoute
	}
	method = knownMethod(method)
	m.httpRequests.WithLabelValues(method, route, strconv.Itoa(status)).Inc()
	m.httpDuration.WithLabelValues(method, route).Observe(took.Seconds())
}

// knownMethod bounds the method label: any other method is "other".
func knownMethod(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions:
		return method
	}
	return "other"
}

// DisbursementTransition records a committed disbursement status change.
func (m *Metrics) DisbursementTransition(from, to string) {
	if m == nil {
		return
	}
	m.disbursementTransitions.WithLabelValues(from, to).Inc()
}

// DisbursementLateResult records a vendor result that contradicted a
// disbursement's final status (stored) with another (reported): an
// operator must look. Alert on any increase.
func (m *Metrics) DisbursementLateResult(vendor, stored, reported string) {
	if m == nil {
		return
	}
	m.disbursementLateResults.WithLabelValues(vendor, stored, reported).Inc()
}

// PaymentTransition records a committed payment status change.
func (m *Metrics) PaymentTransition(from, to string) {
	if m == nil {
		return
	}
	m.paymentTransitions.WithLabelValues(from, to).Inc()
}

// WebhookBlocked is the outcome of a webhook attempt the SSRF guard
// refused (webhooks.OutcomeBlocked): nothing was sent, so nothing is
// timed.
const WebhookBlocked = "blocked"

// WebhookAttempt records a webhook attempt with its outcome (one of the
// webhooks.Outcome* constants) and, unless it was blocked, how long it took.
func (m *Metrics) WebhookAttempt(event, outcome string, took time.Duration) {
	if m == nil {
		return
	}
	m.webhookAttempts.WithLabelValues(event, outcome).Inc()
	if outcome != WebhookBlocked {
		m.webhookDuration.Observe(took.Seconds())
	}
}

// TaskDone records a queued task a worker ran: its type, whether its
// handler succeeded, and how long it took.
func (m *Metrics) TaskDone(taskType string, err error, took time.Duration) {
	if m == nil {
		return
	}
	outcome := "ok"
	if err != nil {
		outcome = "error"
	}
	m.tasksProcessed.WithLabelValues(taskType, outcome).Inc()
	m.taskDuration.WithLabelValues(taskType).Observe(took.Seconds())
}

// ReconcileDone records a finished reconciliation: how many problems it
// found, at when.
func (m *Metrics) ReconcileDone(problems int, when time.Time) {
	if m == nil {
		return
	}
	m.reconcileProblems.Set(float64(problems))
	m.reconcileLastRun.Set(float64(when.Unix()))
}

// GroupRun records one group of requests that shared a write, a pipeline
// or a query (internal/groupcommit): its size and how long it took.
// group is one of a few fixed names (create, move, inline_submit,
// signature_records, wallet_reads, webhook_claims, webhook_outcomes).
func (m *Metrics) GroupRun(group string, size int, took time.Duration) {
	if m == nil {
		return
	}
	m.groupSize.WithLabelValues(group).Observe(float64(size))
	m.groupDuration.WithLabelValues(group).Observe(took.Seconds())
}
