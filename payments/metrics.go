package payments

// Metrics counts what the payment lifecycle commits. The service declares
// what it needs; internal/metrics implements it over Prometheus, so this
// package imports no metrics library.
type Metrics interface {
	// PaymentTransition records a committed payment status change.
	PaymentTransition(from, to string)
}

// noMetrics counts nothing: New puts it in place of a nil Options.Metrics,
// so callers never check.
type noMetrics struct{}

func (noMetrics) PaymentTransition(from, to string) {}
