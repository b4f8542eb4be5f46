package app

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/payoutd/payoutd/internal/config"
	"github.com/payoutd/payoutd/internal/metrics"
	"github.com/payoutd/payoutd/internal/metrics/metricstest"
	"github.com/payoutd/payoutd/payments"
	"github.com/payoutd/payoutd/payouts"
	"github.com/payoutd/payoutd/vendors"
	"github.com/payoutd/payoutd/vendors/breaker"
	"github.com/payoutd/payoutd/vendors/sandbox"
	"github.com/payoutd/payoutd/webhooks"
)

// *metrics.Metrics is the sink the domain packages declare; metrics
// imports none of them, so this is where the two are held together.
var (
	_ payouts.Metrics       = (*metrics.Metrics)(nil)
	_ payments.Metrics      = (*metrics.Metrics)(nil)
	_ webhooks.Metrics      = (*metrics.Metrics)(nil)
	_ vendors.CallObserver  = (*metrics.Metrics)(nil)
	_ metrics.BreakerStates = (*breaker.Set)(nil)
)

// The outcome label values are an operator contract (dashboards, alerts):
// webhooks declares them, and they must not change; metrics, which does
// not import webhooks, knows blocked (never timed) by its value.
func TestWebhookOutcomeLabels(t *testing.T) {
	for got, want := range map[string]string{webhooks.OutcomeDelivered: "delivered", webhooks.OutcomeRetry: "retry",
		webhooks.OutcomeFailed: "failed", webhooks.OutcomeBlocked: "blocked"} {
		if got != want {
			t.Errorf("outcome label %q, want %q", got, want)
		}
	}
	if metrics.WebhookBlocked != webhooks.OutcomeBlocked {
		t.Errorf("metrics.WebhookBlocked %q, webhooks.OutcomeBlocked %q", metrics.WebhookBlocked, webhooks.OutcomeBlocked)
	}
}

// A nil *metrics.Metrics, which the admin commands' services get, is
// called through the domain packages' interfaces without a check: none of
// its methods may dereference it.
func TestNilMetricsThroughTheDomainsInterfaces(t *testing.T) {
	var m *metrics.Metrics
	var po payouts.Metrics = m
	po.GroupRun("move", 2, time.Millisecond)
	po.DisbursementTransition("", "VERIFIED")
	po.DisbursementLateResult("simbank", "SUCCESS", "FAILED")
	var pa payments.Metrics = m
	pa.PaymentTransition("PENDING", "SUCCESS")
	var wh webhooks.Metrics = m
	wh.WebhookAttempt("payment.success", webhooks.OutcomeRetry, time.Millisecond)
	wh.WebhookAttempt("payment.success", webhooks.OutcomeBlocked, 0)
	simbank, err := vendors.Observed(sandbox.Registry(sandbox.Options{}), m).Get(sandbox.SimBank)
	if err != nil {
		t.Fatal(err)
	}
	simbank.Status(context.Background(), "never-submitted")
	BreakerOptions(config.Defaults(), m).OnStateChange("simbank", breaker.Closed, breaker.Open)
}

// downVendor fails every call as a vendor answering 503 does.
type downVendor struct{ vendors.Vendor }

func (downVendor) Name() string { return "downbank" }
func (downVendor) Status(context.Context, string) (vendors.PayoutResult, error) {
	return vendors.PayoutResult{}, vendors.Down(fmt.Errorf("%w: HTTP 503", vendors.ErrUnavailable))
}

// Wired as Build wires them, the breaker's state is a gauge read at each
// scrape, its transitions a counter, and the calls it refuses count as
// breaker_open, never as the vendor's unavailability.
func TestBreakerMetrics(t *testing.T) {
	m := metrics.New()
	cfg := config.Defaults()
	cfg.VendorBreakerFailures, cfg.VendorBreakerOpenFor = 2, time.Hour
	guarded, set := breaker.Wrap(vendors.NewRegistry(downVendor{}), BreakerOptions(cfg, m))
	if err := m.CollectBreakers(set); err != nil {
		t.Fatal(err)
	}
	v, _ := vendors.Observed(guarded, m).Get("downbank")
	gauge := func() float64 { return metricstest.Value(t, m, "payoutd_vendor_breaker_state", "vendor", "downbank") }
	if g := gauge(); g != 0 {
		t.Fatalf("state %v before any call, want 0 (closed)", g)
	}
	for range 5 {
		v.Status(context.Background(), "r")
	}
	if g := gauge(); g != 2 {
		t.Fatalf("state %v after failures, want 2 (open)", g)
	}
	for outcome, want := range map[string]float64{"unavailable": 2, "breaker_open": 3} {
		if n := metricstest.Value(t, m, "payoutd_vendor_calls_total", "vendor", "downbank", "call", "status", "outcome", outcome); n != want {
			t.Errorf("status %s counted %v times, want %v", outcome, n, want)
		}
	}
	if n := metricstest.Value(t, m, "payoutd_vendor_breaker_transitions_total", "vendor", "downbank", "from", "closed", "to", "open"); n != 1 {
		t.Errorf("closed>open transitions %v, want 1", n)
	}
}
