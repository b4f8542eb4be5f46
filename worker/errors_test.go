package worker

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/payoutd/payoutd/payments"
	"github.com/payoutd/payoutd/payouts"
	"github.com/payoutd/payoutd/vendors"
)

// A payment task that ran before its due time is retried on time without
// counting as a failure (its retries stay for real trouble, and the
// dashboard's error rate stays true); every other error is a failure.
func TestIsFailure(t *testing.T) {
	early := &payments.NotDueError{PaymentID: uuid.New(), Step: "expiry", Due: time.Now(), Wait: 300 * time.Millisecond}
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"ran early", early, false},
		{"ran early, wrapped", fmt.Errorf("task: %w", early), false},
		{"vendor outcome unknown", payouts.ErrOutcomeUnknown, true},
		{"database down", errors.New("connection refused"), true},
		{"vendor call refused by its breaker", fmt.Errorf("submit of x: %w", &vendors.RefusedError{Vendor: "simbank", Reason: vendors.RefusedBreakerOpen}), false},
		{"status not asked, outcome still unknown", fmt.Errorf("%w: %w", payouts.ErrOutcomeUnknown, &vendors.RefusedError{Vendor: "simbank"}), false},
	}
	for _, tt := range tests {
		if got := isFailure(tt.err); got != tt.want {
			t.Errorf("%s: isFailure = %v, want %v", tt.name, got, tt.want)
		}
	}
}
