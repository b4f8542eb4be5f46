package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// VendorCall counts a payout vendor call (vendors.CallObserver): its
// vendor, call (inquire, submit, status) and outcome (vendors.CallOutcome).
func (m *Metrics) VendorCall(vendor, call, outcome string) {
	if m == nil {
		return
	}
	m.vendorCalls.WithLabelValues(vendor, call, outcome).Inc()
}

// BreakerTransition counts a vendor circuit breaker's state change, from
// and to closed, half-open or open (breaker.Options.OnStateChange, as
// internal/app wires it).
func (m *Metrics) BreakerTransition(vendor, from, to string) {
	if m == nil {
		return
	}
	m.breakerTransitions.WithLabelValues(vendor, from, to).Inc()
}

// BreakerStates are the vendors' circuit breakers as the state gauge reads
// them (breaker.Set).
type BreakerStates interface {
	// BreakerStates is each vendor's breaker state now: 0 closed,
	// 1 half-open, 2 open (an open breaker whose open period passed reads
	// half-open).
	BreakerStates() map[string]int
}

// CollectBreakers adds payoutd_vendor_breaker_state, read from states at
// each scrape. A nil states adds nothing.
func (m *Metrics) CollectBreakers(states BreakerStates) error {
	if m == nil || states == nil {
		return nil
	}
	return m.registry.Register(breakerCollector{states})
}

var breakerStateDesc = prometheus.NewDesc("payoutd_vendor_breaker_state",
	"Circuit breaker state of each payout vendor in this process: 0 closed, 1 half-open, 2 open.", []string{"vendor"}, nil)

type breakerCollector struct{ states BreakerStates }

func (c breakerCollector) Describe(ch chan<- *prometheus.Desc) { ch <- breakerStateDesc }

func (c breakerCollector) Collect(ch chan<- prometheus.Metric) {
	for vendor, state := range c.states.BreakerStates() {
		ch <- prometheus.MustNewConstMetric(breakerStateDesc, prometheus.GaugeValue, float64(state), vendor)
	}
}
