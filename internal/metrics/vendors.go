package metrics

import (
	"context"
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors"
	"github.com/payoutd/payoutd/vendors/breaker"
)

// WrapVendors returns the registry with every vendor counting its calls
// in payoutd_vendor_calls_total. A wrapped vendor implements
// vendors.Completer and vendors.CallbackParser exactly when the vendor it
// wraps does, notifies (vendors.Notifies) exactly when it does (and
// implements vendors.BatchSubmitter always, through vendors.SubmitAll), so callers' type assertions answer as before. A nil m
// returns r as it is.
func (m *Metrics) WrapVendors(r vendors.Registry) vendors.Registry {
	if m == nil {
		return r
	}
	out := make(vendors.Registry, len(r))
	for name, v := range r {
		out[name] = m.wrapVendor(v)
	}
	return out
}

func (m *Metrics) wrapVendor(v vendors.Vendor) vendors.Vendor {
	base := countingVendor{Vendor: v, m: m}
	completer, canComplete := v.(vendors.Completer)
	parser, parsesCallbacks := vendors.ReceiverOf(v)
	switch {
	case canComplete && parsesCallbacks:
		return struct {
			countingVendor
			vendors.Completer
			vendors.Receiver
		}{base, completer, parser}
	case canComplete:
		return struct {
			countingVendor
			vendors.Completer
		}{base, completer}
	case parsesCallbacks:
		return struct {
			countingVendor
			vendors.Receiver
		}{base, parser}
	}
	return base
}

// countingVendor counts the calls of Vendor; Name and Banks pass through.
type countingVendor struct {
	vendors.Vendor
	m *Metrics
}

func (c countingVendor) Inquire(ctx context.Context, req vendors.InquiryRequest) (vendors.Account, error) {
	a, err := c.Vendor.Inquire(ctx, req)
	c.count("inquire", err)
	return a, err
}

func (c countingVendor) Submit(ctx context.Context, p vendors.Payout) (vendors.PayoutResult, error) {
	r, err := c.Vendor.Submit(ctx, p)
	c.count("submit", err)
	return r, err
}

// SubmitBatch counts each payout of the batch as one submit call.
func (c countingVendor) SubmitBatch(ctx context.Context, ps []vendors.Payout) []vendors.SubmitOutcome {
	out := vendors.SubmitAll(ctx, c.Vendor, ps)
	for _, o := range out {
		c.count("submit", o.Err)
	}
	return out
}

func (c countingVendor) Status(ctx context.Context, reference string) (vendors.PayoutResult, error) {
	r, err := c.Vendor.Status(ctx, reference)
	c.count("status", err)
	return r, err
}

func (c countingVendor) count(call string, err error) {
	c.m.vendorCalls.WithLabelValues(c.Vendor.Name(), call, vendorOutcome(err)).Inc()
}

// BreakerTransition counts a vendor circuit breaker's state change
// (breaker.Options.OnStateChange).
func (m *Metrics) BreakerTransition(vendor string, from, to breaker.State) {
	if m == nil {
		return
	}
	m.breakerTransitions.WithLabelValues(vendor, from.String(), to.String()).Inc()
}

// CollectBreakers adds payoutd_vendor_breaker_state, read from the
// breakers at each scrape (an open breaker whose open period passed reads
// half-open).
func (m *Metrics) CollectBreakers(set *breaker.Set) error {
	if m == nil || set == nil {
		return nil
	}
	return m.registry.Register(breakerCollector{set})
}

var breakerStateDesc = prometheus.NewDesc("payoutd_vendor_breaker_state",
	"Circuit breaker state of each payout vendor in this process: 0 closed, 1 half-open, 2 open.", []string{"vendor"}, nil)

type breakerCollector struct{ set *breaker.Set }

func (c breakerCollector) Describe(ch chan<- *prometheus.Desc) { ch <- breakerStateDesc }

func (c breakerCollector) Collect(ch chan<- prometheus.Metric) {
	for _, st := range c.set.Statuses() {
		ch <- prometheus.MustNewConstMetric(breakerStateDesc, prometheus.GaugeValue, float64(c.set.Guard(st.Vendor).State()), st.Vendor)
	}
}

// vendorOutcome names a vendor's answer. A definite refusal (a rejected
// payout, an account that does not resolve or is inactive, a bank the
// vendor does not serve) is "rejected"; "error" is anything unexpected.
func vendorOutcome(err error) string {
	var refused *vendors.RefusedError
	switch {
	case err == nil:
		return "ok"
	case errors.As(err, &refused):
		return refused.Reason // breaker_open, concurrency_limit: never sent
	case errors.Is(err, vendors.ErrRejected), errors.Is(err, models.ErrAccountNotResolved),
		errors.Is(err, models.ErrAccountInactive), errors.Is(err, models.ErrUnsupportedBank):
		return "rejected"
	case errors.Is(err, vendors.ErrUnavailable):
		return "unavailable"
	case errors.Is(err, vendors.ErrUnknownPayout):
		return "unknown_payout"
	}
	return "error"
}
