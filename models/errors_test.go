package models

import (
	"errors"
	"fmt"
	"testing"
)

// A hint rides beside a domain error without hiding it: errors.Is and
// errors.As see the error through it (so its status does not change), and
// the outermost hint is the one answered.
func TestWithHint(t *testing.T) {
	err := fmt.Errorf("reading: %w", WithHint(ErrTimestampWindow, "the x-timestamp header is missing"))
	if !errors.Is(err, ErrTimestampWindow) {
		t.Fatal("errors.Is does not see the hinted error")
	}
	if got := HintOf(err); got != "the x-timestamp header is missing" {
		t.Fatalf("HintOf = %q", got)
	}
	v := WithHint(Invalid("amount must be a whole number of rupiah"), "send 100000, not 100000.5")
	if !IsValidation(v) {
		t.Fatal("errors.As does not see the ValidationError")
	}
	if got := HintOf(WithHint(v, "outer")); got != "outer" {
		t.Fatalf("HintOf of two hints = %q, want the outer", got)
	}
	if WithHint(ErrInvalidAPIKey, "") != ErrInvalidAPIKey || WithHint(nil, "x") != nil || HintOf(ErrInvalidAPIKey) != "" {
		t.Fatal("an empty hint or a nil error must pass through unchanged")
	}
}
