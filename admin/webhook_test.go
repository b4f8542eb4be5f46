package admin_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// receiver is a merchant's webhook endpoint answering status, counting
// what it got.
func receiver(t *testing.T, status *atomic.Int32, got *atomic.Int32) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Add(1)
		w.WriteHeader(int(status.Load()))
	}))
	t.Cleanup(s.Close)
	return s
}

func TestWebhookList(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	var status, got atomic.Int32
	status.Store(http.StatusNoContent)
	backend := receiver(t, &status, &got)
	client := h.ok("client", "create", "--name", "Toko", "--payout-webhook-url", backend.URL+"/hooks/t0ken")["client_id"].(string)

	// None yet: an empty array, not null.
	if out := h.ok("webhook", "list", "--client", client); out["client_id"] != client || len(out["events"].([]any)) != 0 {
		t.Fatalf("webhook list with no events printed %v", out)
	}
	first := h.webhookEvent(client)
	second := h.webhookEvent(client)
	h.ok("webhook", "redeliver", "--event", first.ID.String())

	out := h.ok("webhook", "list", "--client", client)
	events := out["events"].([]any)
	if out["client_id"] != client || len(events) != 2 {
		t.Fatalf("webhook list printed %v", out)
	}
	// Newest first, each with its last attempt.
	newest, oldest := events[0].(map[string]any), events[1].(map[string]any)
	if newest["event_id"] != second.ID.String() || newest["last_attempt"] != nil || newest["attempts"] != float64(0) ||
		newest["event"] != "disbursement.success" || newest["subject_id"] != second.SubjectID.String() {
		t.Errorf("newest event listed as %v", newest)
	}
	last, _ := oldest["last_attempt"].(map[string]any)
	if oldest["event_id"] != first.ID.String() || oldest["state"] != "delivered" || oldest["delivered_at"] == nil ||
		last == nil || last["status_code"] != float64(http.StatusNoContent) {
		t.Errorf("delivered event listed as %v", oldest)
	}
	if strings.Contains(h.lastStdout(), "t0ken") {
		t.Errorf("webhook list printed the webhook URL's path: %s", h.lastStdout())
	}
	if out := h.ok("webhook", "list", "--client", client, "--limit", "1"); len(out["events"].([]any)) != 1 {
		t.Errorf("--limit 1 listed %v", out["events"])
	}

	h.usageError("--client is required", "webhook", "list")
	h.usageError("--limit must be from 1 to 1000", "webhook", "list", "--client", client, "--limit", "0")
	h.usageError(`invalid value "ten" for flag -limit: parse error`, "webhook", "list", "--client", client, "--limit", "ten")
	h.fails(1, "client not found", "webhook", "list", "--client", unknownID)
}

func TestWebhookRedeliver(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	var status, got atomic.Int32
	status.Store(http.StatusNoContent)
	backend := receiver(t, &status, &got)
	client := h.ok("client", "create", "--name", "Toko", "--payout-webhook-url", backend.URL+"/hooks/t0ken?sig=abc")["client_id"].(string)
	ev := h.webhookEvent(client)

	out := h.ok("webhook", "redeliver", "--event", ev.ID.String())
	last := out["last_attempt"].(map[string]any)
	if out["event_id"] != ev.ID.String() || out["event"] != "disbursement.success" || out["subject_id"] != ev.SubjectID.String() ||
		out["state"] != "delivered" || out["delivered_at"] == nil || out["attempts"] != float64(1) || out["next_attempt_at"] != nil {
		t.Fatalf("webhook redeliver printed %v", out)
	}
	if last["attempt"] != float64(1) || last["status_code"] != float64(http.StatusNoContent) || last["error"] != nil ||
		last["url"] != backend.URL+"/…" {
		t.Fatalf("webhook redeliver's last attempt %v", last)
	}
	if got.Load() != 1 {
		t.Fatalf("the receiver got %d deliveries, want 1", got.Load())
	}

	// The receiver refuses: the event is printed all the same, with the
	// attempt, and the command fails saying what the merchant answered.
	status.Store(http.StatusInternalServerError)
	r := h.run("webhook", "redeliver", "--event", ev.ID.String())
	if r.code != 1 {
		t.Fatalf("a refused redelivery exits %d, want 1; stderr %s", r.code, r.stderr)
	}
	printed := oneObject(t, r.args, r.stdout)
	checkContract(t, "webhook redeliver", printed)
	failed := printed["last_attempt"].(map[string]any)
	if printed["state"] != "delivered" || failed["attempt"] != float64(2) || failed["status_code"] != float64(http.StatusInternalServerError) {
		t.Fatalf("a refused redelivery printed %v", printed)
	}
	if rest := errorLines(t, r.args, r.stderr,
		fmt.Sprintf("redelivery of event %s failed (attempt 2): %s", ev.ID, failed["error"])); len(rest) != 0 {
		t.Fatalf("after the error: %q", rest)
	}
	if !strings.Contains(fmt.Sprint(failed["error"]), "500") {
		t.Errorf("the attempt's error %q does not say what the merchant answered", failed["error"])
	}

	h.usageError("--event is required", "webhook", "redeliver")
	h.usageError("--event must be a UUID", "webhook", "redeliver", "--event", "e95c")
	h.fails(1, "webhook event "+unknownID+": not found", "webhook", "redeliver", "--event", unknownID)
	// An event of a client without a URL cannot be sent.
	bare := h.ok("client", "create", "--name", "Tanpa URL")["client_id"].(string)
	h.fails(1, fmt.Sprintf("client %s has no payout webhook URL: set it with payoutd admin client update", bare),
		"webhook", "redeliver", "--event", h.webhookEvent(bare).ID.String())
}
