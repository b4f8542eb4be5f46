package models

import (
	"errors"
	"fmt"
	"testing"
)

// A hint rides beside a domain error without hiding it: errors.Is and
// errors.As see the error through it (so its code does not change), and
// the outermost hint is the one answered.
func TestWithHint(t *testing.T) {
	err := fmt.Errorf("reading: %w", WithHint(ErrHolderNameRequired, "send account_holder_name"))
	if !errors.Is(err, ErrHolderNameRequired) {
		t.Fatal("errors.Is does not see the hinted error")
	}
	if got := HintOf(err); got != "send account_holder_name" {
		t.Fatalf("HintOf = %q", got)
	}
	if ErrorCode(err) != EUNPROCESSABLE || ErrorMessage(err) != ErrHolderNameRequired.Message {
		t.Fatalf("hinted error: code %q, message %q; want the hinted error's", ErrorCode(err), ErrorMessage(err))
	}
	v := WithHint(Invalid("amount must be a whole number of rupiah"), "send 100000, not 100000.5")
	if ErrorCode(v) != EINVALID {
		t.Fatal("errors.As does not see the invalid error")
	}
	if got := HintOf(WithHint(v, "outer")); got != "outer" {
		t.Fatalf("HintOf of two hints = %q, want the outer", got)
	}
	if WithHint(ErrInvalidAPIKey, "") != ErrInvalidAPIKey || WithHint(nil, "x") != nil || HintOf(ErrInvalidAPIKey) != "" {
		t.Fatal("an empty hint or a nil error must pass through unchanged")
	}
	if got, want := err.Error(), "reading: account_holder_name is required for this recipient (send account_holder_name)"; got != want {
		t.Fatalf("Error() = %q, want %q (for the log: the wraps, then the hint)", got, want)
	}
}

// A code and a message are found through wraps; an error without an
// *Error is internal, and its text never becomes a client's message.
func TestErrorCodeAndMessage(t *testing.T) {
	tests := []struct {
		err       error
		code, msg string
	}{
		{nil, "", ""},
		{ErrInsufficientBalance, EINSUFFICIENT, "Insufficient balance"},
		{fmt.Errorf("wallet %d: %w", 7, ErrWalletNotFound), ENOTFOUND, "wallet not found"},
		{Refuse("withdrawal amount is below minimum: 12500"), EUNPROCESSABLE, "withdrawal amount is below minimum: 12500"},
		{Invalid("amount 5% is not a number"), EINVALID, "amount 5% is not a number"},
		{errors.New("pq: connection refused"), EINTERNAL, InternalMessage},
		{fmt.Errorf("%w: ledger entry", ErrAmountOverflow), EINTERNAL, InternalMessage},
		{WithHint(errors.New("template broke"), "a hint"), EINTERNAL, InternalMessage},
		{&Error{Message: "no code"}, EINTERNAL, InternalMessage},
	}
	for _, tt := range tests {
		if got := ErrorCode(tt.err); got != tt.code {
			t.Errorf("ErrorCode(%v) = %q, want %q", tt.err, got, tt.code)
		}
		if got := ErrorMessage(tt.err); got != tt.msg {
			t.Errorf("ErrorMessage(%v) = %q, want %q", tt.err, got, tt.msg)
		}
	}
}
