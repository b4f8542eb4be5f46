package webhooks_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/payoutd/payoutd/internal/testenv"
	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/webhooks"
)

// A merchant's webhook URL that answers with a redirect is not followed:
// the signed body never reaches the host the Location names (which could
// be an internal address: SSRF). Each such answer is a failed attempt,
// recorded with its status and retried, until the URL answers a 2xx.
func TestDeliveryDoesNotFollowRedirects(t *testing.T) {
	t.Parallel()
	sink := testenv.NewSink(t, nil)
	var calls atomic.Int32
	statuses := []int{http.StatusTemporaryRedirect, http.StatusFound, http.StatusMovedPermanently}
	merchant := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n := int(calls.Add(1)); n <= len(statuses) {
			sink.Redirect(statuses[n-1])(w, r)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(merchant.Close)
	e := newEnv(t, merchant.URL+"/hooks")
	ev := e.eventOf(e.payout("1234567890", ""), models.WebhookDelivered)
	sink.Check(t, webhooks.SignatureHeader, webhooks.EventIDHeader)
	attempts := e.attempts(ev.ID)
	if len(attempts) != len(statuses)+1 {
		t.Fatalf("%d attempts recorded, want %d", len(attempts), len(statuses)+1)
	}
	for i, status := range statuses {
		a := attempts[i]
		want := fmt.Sprintf("answered %d %s", status, http.StatusText(status))
		if a.StatusCode == nil || *a.StatusCode != status || a.Error == nil || *a.Error != want || a.NextAttemptAt == nil {
			t.Errorf("attempt %d recorded as %+v, want a failed attempt (%q), retried", i+1, a, want)
		}
	}
}
