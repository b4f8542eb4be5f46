package railcheck

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/payoutd/payoutd/internal/config"
	"github.com/payoutd/payoutd/vendors"
)

const testKey = "xnd_development_UNIT-secret-key-0123456789"

// fakeXendit stands for the xendit vendor: its answers are the test's.
type fakeXendit struct {
	banksErr  error
	submitErr error
	mu        sync.Mutex
	statuses  []vendors.PayoutStatus // answered in turn, the last repeated
}

func (f *fakeXendit) Name() string { return "xendit" }

func (f *fakeXendit) Banks(context.Context) ([]vendors.Bank, error) {
	return []vendors.Bank{{Code: "bca"}}, f.banksErr
}

func (f *fakeXendit) Inquire(context.Context, vendors.InquiryRequest) (vendors.Account, error) {
	return vendors.Account{}, nil
}

func (f *fakeXendit) Submit(_ context.Context, p vendors.Payout) (vendors.PayoutResult, error) {
	if f.submitErr != nil {
		return vendors.PayoutResult{}, f.submitErr
	}
	return vendors.PayoutResult{Reference: p.Reference, Status: vendors.PayoutPending}, nil
}

func (f *fakeXendit) Status(_ context.Context, ref string) (vendors.PayoutResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st := f.statuses[0]
	if len(f.statuses) > 1 {
		f.statuses = f.statuses[1:]
	}
	return vendors.PayoutResult{Reference: ref, Status: st}, nil
}

// check runs Run for xendit against v, with a base URL that answers.
func check(t *testing.T, v *fakeXendit, wait time.Duration) Report {
	t.Helper()
	srv := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(srv.Close)
	env := map[string]string{"APP_ENV": "staging", "XENDIT_SECRET_KEY": testKey, "XENDIT_CALLBACK_TOKEN": "unit-callback-token-0123456789",
		"XENDIT_BASE_URL": srv.URL}
	return Run(context.Background(), Options{Vendor: "xendit", Getenv: func(k string) string { return env[k] },
		Vendors: func(config.Config) (vendors.Registry, error) { return vendors.NewRegistry(v), nil },
		Wait:    wait, Poll: time.Millisecond})
}

func stepOf(t *testing.T, r Report, name string) Step {
	t.Helper()
	for _, s := range r.Steps {
		if s.Step == name {
			return s
		}
	}
	t.Fatalf("no step %s", name)
	return Step{}
}

// An error that carries a secret (a provider echoing the key, say) is
// reported with the secret replaced.
func TestSecretsNeverReported(t *testing.T) {
	r := check(t, &fakeXendit{banksErr: fmt.Errorf("%w: upstream said key %s is unknown", vendors.ErrUnavailable, testKey)}, time.Second)
	out, _ := json.Marshal(r)
	if strings.Contains(string(out), testKey) || !strings.Contains(stepOf(t, r, StepAuth).Error, "key [redacted] is unknown") {
		t.Fatalf("report %s: the key must be redacted", out)
	}
}

// The payout step follows the payout through Status: an unknown outcome
// at submit is asked about, a failure or a payout still pending at the
// deadline fails the step.
func TestPayoutFollowedToItsEnd(t *testing.T) {
	for _, tt := range []struct {
		name     string
		v        *fakeXendit
		status   string
		statuses []any
		errorHas string
	}{
		{"paid", &fakeXendit{statuses: []vendors.PayoutStatus{vendors.PayoutPending, vendors.PayoutSuccess}},
			StatusOK, []any{"PENDING", "SUCCESS"}, ""},
		{"unknown outcome, then paid", &fakeXendit{submitErr: vendors.ErrUnavailable, statuses: []vendors.PayoutStatus{vendors.PayoutSuccess}},
			StatusOK, []any{"SUCCESS"}, ""},
		{"failed", &fakeXendit{statuses: []vendors.PayoutStatus{vendors.PayoutFailed}},
			StatusFailed, []any{"PENDING", "FAILED"}, "ended FAILED"},
		{"rejected", &fakeXendit{submitErr: fmt.Errorf("%w: INSUFFICIENT_BALANCE", vendors.ErrRejected)},
			StatusFailed, nil, "the rail refused the test payout"},
		{"pending at the deadline", &fakeXendit{statuses: []vendors.PayoutStatus{vendors.PayoutPending}},
			StatusFailed, []any{"PENDING"}, "is not final after"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := check(t, tt.v, 50*time.Millisecond)
			p := stepOf(t, r, StepPayout)
			out, _ := json.Marshal(p)
			var back Step
			_ = json.Unmarshal(out, &back)
			got, _ := back.Data["statuses"].([]any)
			if p.Status != tt.status || fmt.Sprint(got) != fmt.Sprint(tt.statuses) || !strings.Contains(p.Error, tt.errorHas) ||
				!strings.HasPrefix(p.Data["reference"].(string), "railcheck-") || r.OK != (tt.status == StatusOK) {
				t.Fatalf("payout %s (report ok %v): want %s with statuses %v and an error with %q", out, r.OK, tt.status, tt.statuses, tt.errorHas)
			}
		})
	}
}
