package api

import (
	"net/http"
	"strings"
	"testing"

	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors/sandbox"
)

const holderNameRequired = "account_holder_name is required for this recipient"

// Every payout is sent with a holder name: the inquiry's, else the one the
// merchant supplied, else the quote and the create answer 422 before
// anything is locked. The sandbox account 1000000009 resolves without a
// name, as an account of a rail that cannot inquire one does.
func TestHolderNameSources(t *testing.T) {
	t.Parallel()
	forEachQueue(t, payoutSetup{}, func(t *testing.T, e *payoutEnv) {
		noName := map[string]any{"account_no": sandbox.AccountNameUnknown}
		before := e.snapshot()
		e.quoteRaw(e.jsonBody(noName)).expect(t, http.StatusUnprocessableEntity, holderNameRequired)
		r := e.createRaw("hn-1", e.jsonBody(noName))
		r.expect(t, http.StatusUnprocessableEntity, holderNameRequired)
		if hint, _ := r.fields(t)["hint"].(string); !strings.Contains(hint, "account_holder_name") {
			t.Errorf("422 hint %q does not name the field", hint)
		}
		// A blank name is no name.
		e.createRaw("hn-1", e.jsonBody(map[string]any{"account_no": sandbox.AccountNameUnknown, "account_holder_name": "   "})).
			expect(t, http.StatusUnprocessableEntity, holderNameRequired)
		e.unchanged(before)

		// The merchant's name, trimmed, when the inquiry has none.
		named := map[string]any{"account_no": sandbox.AccountNameUnknown, "account_holder_name": " Siti Aminah "}
		q := e.quoteRaw(e.jsonBody(named))
		if q.status != http.StatusOK || q.fields(t)["account_holder_name"] != "Siti Aminah" {
			t.Fatalf("quote with a name: %d %s", q.status, q.body)
		}
		d := e.createRaw("hn-2", e.jsonBody(named)).created(t, models.StatusSuccess, models.StatusRequested, models.StatusVerified)
		if d.AccountHolderName != "Siti Aminah" {
			t.Errorf("created account_holder_name %q, want Siti Aminah", d.AccountHolderName)
		}

		// The inquiry's name wins over the merchant's: it is the registered one.
		other := map[string]any{"account_no": "1234567890", "account_holder_name": "Someone Else"}
		if q := e.quoteRaw(e.jsonBody(other)); q.fields(t)["account_holder_name"] != "SANDBOX 7890" {
			t.Errorf("quote shows %v, want the inquired SANDBOX 7890", q.fields(t)["account_holder_name"])
		}
		if d := e.createRaw("hn-3", e.jsonBody(other)).created(t, models.StatusSuccess, models.StatusRequested, models.StatusVerified); d.AccountHolderName != "SANDBOX 7890" {
			t.Errorf("created account_holder_name %q, want SANDBOX 7890", d.AccountHolderName)
		}
	})
}

// The supplied name is a compared parameter: the same key with another
// name (or none) is a mismatch; the same name, differently padded, a replay.
func TestHolderNameIsComparedOnReplay(t *testing.T) {
	t.Parallel()
	forEachQueue(t, payoutSetup{}, func(t *testing.T, e *payoutEnv) {
		named := map[string]any{"account_no": sandbox.AccountNameUnknown, "account_holder_name": "Siti Aminah"}
		first := e.createRaw("hn-r", e.jsonBody(named)).created(t, models.StatusSuccess, models.StatusRequested, models.StatusVerified)

		r := e.createRaw("hn-r", e.jsonBody(map[string]any{"account_no": sandbox.AccountNameUnknown, "account_holder_name": "Siti  Aminah "}))
		r.expect(t, http.StatusUnprocessableEntity, mismatchMsg)
		e.createRaw("hn-r", e.jsonBody(map[string]any{"account_no": sandbox.AccountNameUnknown})).expect(t, http.StatusUnprocessableEntity, mismatchMsg)

		r = e.createRaw("hn-r", e.jsonBody(map[string]any{"account_no": sandbox.AccountNameUnknown, "account_holder_name": "  Siti Aminah"}))
		if r.header.Get("Idempotent-Replayed") != "true" || r.disbursement(t).ID != first.ID {
			t.Fatalf("padded name: %d %s, want the replay of %s", r.status, r.body, first.ID)
		}
	})
}

func TestHolderNameValidation(t *testing.T) {
	t.Parallel()
	e := setupPayouts(t, payoutSetup{})
	before := e.snapshot()
	tests := []struct {
		name string
		in   any
		msg  string
	}{
		{"101 characters", strings.Repeat("a", 101), "account_holder_name must be at most 100 characters"},
		{"a control character", "Siti\u0007Aminah", "account_holder_name must not contain control characters"},
		{"a newline inside", "Siti\nAminah", "account_holder_name must not contain control characters"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := e.sub(t)
			body := e.jsonBody(map[string]any{"account_holder_name": tt.in})
			e.quoteRaw(body).expect(t, http.StatusBadRequest, tt.msg)
			e.createRaw("hn-v", body).expect(t, http.StatusBadRequest, tt.msg)
		})
	}
	// 100 characters, some of them multi-byte, are accepted.
	long := strings.Repeat("é", 100)
	if q := e.quoteRaw(e.jsonBody(map[string]any{"account_no": sandbox.AccountNameUnknown, "account_holder_name": long})); q.status != http.StatusOK {
		t.Errorf("100 characters: %d %s", q.status, q.body)
	}
	e.unchanged(before)
}
