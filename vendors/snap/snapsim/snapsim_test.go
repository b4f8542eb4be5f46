package snapsim

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors"
	"github.com/payoutd/payoutd/vendors/sandbox"
)

func TestOnlyPOSTOnKnownPaths(t *testing.T) {
	b := New(Options{})
	for _, tc := range []struct {
		method, path string
		want         int
	}{
		{http.MethodGet, "/v1.0/access-token/b2b", http.StatusMethodNotAllowed},
		{http.MethodPost, "/v1.0/nope", http.StatusNotFound},
	} {
		w := httptest.NewRecorder()
		b.ServeHTTP(w, httptest.NewRequest(tc.method, tc.path, nil))
		if w.Code != tc.want {
			t.Errorf("%s %s = %d, want %d", tc.method, tc.path, w.Code, tc.want)
		}
	}
}

// Complete follows the sandbox's rules: by hand before the automatic
// outcome, no contradiction of an outcome already due.
func TestComplete(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	b := New(Options{Now: func() time.Time { return now }})
	if err := b.Complete("nope", vendors.PayoutSuccess, ""); !errors.Is(err, vendors.ErrUnknownPayout) {
		t.Errorf("unknown: %v", err)
	}
	b.transfers["p"] = &transfer{ref: "p", account: sandbox.AccountStaysRequested, amount: models.Rupiah(1), acceptedAt: now, submitCalls: 1}
	b.transfers["q"] = &transfer{ref: "q", account: "1234567890", amount: models.Rupiah(1), acceptedAt: now.Add(-time.Hour), submitCalls: 1}
	if err := b.Complete("p", vendors.PayoutPending, ""); err == nil {
		t.Error("PENDING accepted")
	}
	if err := b.Complete("p", vendors.PayoutFailed, ""); err != nil {
		t.Fatal(err)
	}
	if st, reason := b.stateLocked(b.transfers["p"]); st != "06" || reason == "" {
		t.Errorf("after Complete FAILED: %s %q", st, reason)
	}
	if err := b.Complete("p", vendors.PayoutSuccess, ""); !errors.Is(err, ErrAlreadyFinal) {
		t.Errorf("SUCCESS after FAILED: %v", err)
	}
	if err := b.Complete("q", vendors.PayoutFailed, "late"); !errors.Is(err, ErrAlreadyFinal) {
		t.Errorf("FAILED after a due SUCCESS: %v", err)
	}
	if n := b.SubmitCalls("q"); n != 1 {
		t.Errorf("SubmitCalls = %d", n)
	}
}
