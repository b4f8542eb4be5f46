package metrics

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/payoutd/payoutd/vendors"
	"github.com/payoutd/payoutd/vendors/breaker"
)

// downVendor fails every call as a vendor answering 503 does.
type downVendor struct{ vendors.Vendor }

func (downVendor) Name() string { return "downbank" }
func (downVendor) Status(context.Context, string) (vendors.PayoutResult, error) {
	return vendors.PayoutResult{}, vendors.Down(fmt.Errorf("%w: HTTP 503", vendors.ErrUnavailable))
}

// The breaker's state is a gauge read at each scrape, its transitions a
// counter, and the calls it refuses count as breaker_open, never as the
// vendor's unavailability.
func TestBreakerMetrics(t *testing.T) {
	m := New()
	var hook func(string, breaker.State, breaker.State) = m.BreakerTransition
	guarded, set := breaker.Wrap(vendors.NewRegistry(downVendor{}), breaker.Options{Failures: 2, OpenFor: time.Hour, OnStateChange: hook})
	if err := m.CollectBreakers(set); err != nil {
		t.Fatal(err)
	}
	v, _ := m.WrapVendors(guarded).Get("downbank")
	gauge := func() float64 {
		families, err := m.Registry().Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range families {
			if f.GetName() == "payoutd_vendor_breaker_state" {
				for _, s := range f.GetMetric() {
					if s.GetLabel()[0].GetValue() == "downbank" {
						return s.GetGauge().GetValue()
					}
				}
			}
		}
		t.Fatal("no payoutd_vendor_breaker_state{vendor=\"downbank\"}")
		return -1
	}
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
		if n := testutil.ToFloat64(m.vendorCalls.WithLabelValues("downbank", "status", outcome)); n != want {
			t.Errorf("status %s counted %v times, want %v", outcome, n, want)
		}
	}
	if n := testutil.ToFloat64(m.breakerTransitions.WithLabelValues("downbank", "closed", "open")); n != 1 {
		t.Errorf("closed>open transitions %v, want 1", n)
	}
	if got := vendorOutcome(&vendors.RefusedError{Vendor: "x", Reason: vendors.RefusedConcurrencyBusy}); got != "concurrency_limit" {
		t.Errorf("a refusal for want of a slot counts as %q, want concurrency_limit", got)
	}
}
