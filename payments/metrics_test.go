package payments

import (
	"context"
	"testing"

	"github.com/payoutd/payoutd/internal/metrics"
	"github.com/payoutd/payoutd/internal/metrics/metricstest"
	"github.com/payoutd/payoutd/vendors"
)

// A committed move is counted once; a late result, which moves nothing,
// is not.
func TestPaymentTransitionsCounted(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	m := metrics.New()
	f.svc.metrics = m
	p := f.create(20_000)
	f.now = p.ExpiredAt
	if err := f.svc.Expire(context.Background(), p.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.ApplyResult(context.Background(), vendors.AcquirerResult{PaymentID: p.ID, Status: ResultSuccess,
		RetrievalReferenceNo: "000000000042", PaidAt: f.now}, "sandboxpay"); err != nil {
		t.Fatal(err)
	}
	if n := metricstest.Value(t, m, "payoutd_payment_transitions_total", "from", "PENDING", "to", "EXPIRED"); n != 1 {
		t.Errorf("PENDING → EXPIRED counted %v times, want 1", n)
	}
	if n := metricstest.Value(t, m, "payoutd_payment_transitions_total", "from", "EXPIRED", "to", "SUCCESS"); n != 0 {
		t.Errorf("a late result counted as a move (%v)", n)
	}
}
