package payouts

import "time"

// Metrics counts what the disbursement lifecycle commits. The service
// declares what it needs; internal/metrics implements it over Prometheus,
// so this package imports no metrics library.
type Metrics interface {
	// DisbursementTransition records a committed status change; a create
	// counts from "".
	DisbursementTransition(from, to string)
	// DisbursementLateResult records a vendor result (reported) that
	// contradicted a disbursement's final status (stored).
	DisbursementLateResult(vendor, stored, reported string)
	// GroupRun records one group of creates, moves or inline submits that
	// shared a transaction: its size and how long it took.
	GroupRun(group string, size int, took time.Duration)
}

// noMetrics counts nothing: New puts it in place of a nil Options.Metrics,
// so callers never check.
type noMetrics struct{}

func (noMetrics) DisbursementTransition(from, to string)                 {}
func (noMetrics) DisbursementLateResult(vendor, stored, reported string) {}
func (noMetrics) GroupRun(group string, size int, took time.Duration)    {}

// ObserveGroup is a groupcommit.Group's Observe for the named group
// (dispatch counts its inline submits with it).
func (s *Service) ObserveGroup(name string) func(size int, took time.Duration) {
	return func(size int, took time.Duration) { s.metrics.GroupRun(name, size, took) }
}
