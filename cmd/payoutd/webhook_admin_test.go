package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/payoutd/payoutd/admin"
	"github.com/payoutd/payoutd/internal/app"
	"github.com/payoutd/payoutd/internal/config"
	"github.com/payoutd/payoutd/internal/credentials"
	"github.com/payoutd/payoutd/internal/database"
	"github.com/payoutd/payoutd/internal/testenv"
	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors/sandbox"
	"github.com/payoutd/payoutd/webhooks"
)

// The deliverer the api, worker and admin CLI build: with APP_ENV=production
// the SSRF guard refuses http and the service's own addresses unless
// WEBHOOK_ALLOWED_NETWORKS lets them through; in staging it delivers to
// them. Unconfigured, an attempt has 10 s and retries span 72 hours.
func TestWebhookDelivererFollowsAppEnv(t *testing.T) {
	t.Parallel()
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	t.Cleanup(plain.Close)
	tlsReceiver := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	t.Cleanup(tlsReceiver.Close)
	db := testenv.DB(t)
	key := make([]byte, 32)
	rand.Read(key)
	sealer, _ := credentials.NewSealer(key)
	ops := admin.Deps{DB: db, Sealer: sealer, Env: models.Staging, Vendors: sandbox.Registry(sandbox.Options{})}

	// deliver sends one event to url with the deliverer of env and returns
	// the attempt.
	deliver := func(env map[string]string, url string) models.WebhookAttempt {
		t.Helper()
		cfg, err := config.Load(func(k string) string { return env[k] }, config.Defaults())
		if err != nil {
			t.Fatal(err)
		}
		creds, err := admin.CreateClient(context.Background(), ops, admin.ClientOptions{Name: "Toko", PayoutWebhookURL: url})
		if err != nil {
			t.Fatal(err)
		}
		var ev *models.WebhookEvent
		err = db.Transaction(func(tx *gorm.DB) (err error) {
			ev, err = webhooks.Record(tx, webhooks.NewEvent{ClientID: uuid.MustParse(creds.ClientID), Event: webhooks.DisbursementSuccess,
				SubjectID: uuid.New(), Target: models.TargetPayout, Data: map[string]string{}}, time.Now())
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		d := app.WebhookDeliverer(cfg, db, sealer, nil, nil)
		d.Deliver(context.Background(), ev.ID)
		attempts, err := d.Attempts(context.Background(), ev.ID)
		if err != nil || len(attempts) != 1 {
			t.Fatalf("%d attempts (%v), want 1", len(attempts), err)
		}
		return attempts[0]
	}
	errorOf := func(a models.WebhookAttempt) string {
		if a.Error == nil {
			return ""
		}
		return *a.Error
	}
	production := map[string]string{"APP_ENV": "production"}

	if a := deliver(production, tlsReceiver.URL+"/hooks"); !strings.Contains(errorOf(a), ": webhook destination refused: 127.0.0.1 is a loopback") {
		t.Errorf("production, https to 127.0.0.1: %q, want the guard's refusal", errorOf(a))
	}
	if a := deliver(production, plain.URL+"/hooks"); errorOf(a) != "webhook destination refused: production webhooks must use https" {
		t.Errorf("production, http: %q, want the guard's refusal", errorOf(a))
	}
	// Let through by WEBHOOK_ALLOWED_NETWORKS, the delivery reaches the
	// receiver and fails only on its test certificate.
	allowed := map[string]string{"APP_ENV": "production", "WEBHOOK_ALLOWED_NETWORKS": "127.0.0.0/8"}
	if a := deliver(allowed, tlsReceiver.URL+"/hooks"); a.Error == nil || strings.Contains(errorOf(a), "destination refused") || !strings.Contains(errorOf(a), "certificate") {
		t.Errorf("production allowing 127.0.0.0/8: %q, want only the certificate refused", errorOf(a))
	}
	if a := deliver(map[string]string{"APP_ENV": "staging"}, plain.URL+"/hooks"); a.StatusCode == nil || *a.StatusCode != http.StatusNoContent {
		t.Errorf("staging, http to 127.0.0.1: %+v (%q), want delivered", a, errorOf(a))
	}

	cfg, _ := config.Load(func(string) string { return "" }, config.Defaults())
	d := app.WebhookDeliverer(cfg, db, sealer, nil, nil)
	if s := d.Schedule(); d.Timeout() != 10*time.Second || s.Base != 30*time.Second || s.Cap != 6*time.Hour || s.Window != 72*time.Hour {
		t.Fatalf("default timeout %s and schedule %+v, want 10s and 30s doubling to 6h over 72h", d.Timeout(), s)
	}
}

// An event whose every attempt failed is listed as failed with its last
// attempt, the URL's credentials hidden; redelivering it while the
// merchant still fails prints the event and exits 1 with one error line.
func TestAdminWebhookFailedEventAndFailedRedelivery(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var logins []string
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, pass, _ := r.BasicAuth()
		mu.Lock()
		logins = append(logins, user+":"+pass)
		mu.Unlock()
		w.WriteHeader(http.StatusInternalServerError)
	}))
	defer backend.Close()
	hookURL := strings.Replace(backend.URL, "http://", "http://ops:s3cret@", 1) + "/hooks"
	shown := strings.Replace(backend.URL, "http://", "http://xxxxx@", 1) + "/…"

	c := newCLI(t)
	client := c.ok("client", "create", "--name", "Toko", "--payout-webhook-url", hookURL)["client_id"].(string)
	wallet := c.ok("wallet", "create", "--client", client, "--name", "Main", "--vendor", "simbank")["wallet_id"].(string)
	c.ok("wallet", "adjust", "--wallet", wallet, "--amount", "1000000", "--memo", "funding")
	svc := c.payoutsOn()
	payout := createPayout(t, svc, c.client(client), wallet, "1000000003", "k1") // rejected: disbursement.failed
	if err := svc.Submit(context.Background(), payout.ID); err != nil {
		t.Fatal(err)
	}
	eventID := c.ok("webhook", "list", "--client", client)["events"].([]any)[0].(map[string]any)["event_id"].(string)

	// The worker's deliverer, its schedule compressed to milliseconds,
	// runs the event to the end of it.
	env := maps.Clone(c.env)
	env["WEBHOOK_RETRY_BASE"], env["WEBHOOK_RETRY_CAP"], env["WEBHOOK_RETRY_WINDOW"] = "5ms", "10ms", "30ms"
	cfg, err := config.Load(func(k string) string { return env[k] }, config.Defaults())
	if err != nil {
		t.Fatal(err)
	}
	db, err := database.Open(c.env["DATABASE_URL"])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if sqlDB, err := db.DB(); err == nil {
			sqlDB.Close()
		}
	})
	sealer, _ := cfg.Sealer()
	worker := app.WebhookDeliverer(cfg, db, sealer, nil, nil)
	err = nil
	for i := 0; i < 50 && !errors.Is(err, webhooks.ErrGaveUp); i++ {
		err = worker.Deliver(context.Background(), uuid.MustParse(eventID))
	}
	if !errors.Is(err, webhooks.ErrGaveUp) {
		t.Fatalf("the schedule did not end: %v", err)
	}

	r := c.run("webhook", "list", "--client", client)
	if r.code != 0 || strings.Contains(r.stdout, "s3cret") {
		t.Fatalf("webhook list exit %d, stdout %s", r.code, r.stdout)
	}
	ev := r.json["events"].([]any)[0].(map[string]any)
	last, _ := ev["last_attempt"].(map[string]any)
	attempts := ev["attempts"].(float64)
	if ev["event_id"] != eventID || ev["state"] != "failed" || attempts < 2 || ev["next_attempt_at"] != nil || last == nil {
		t.Fatalf("failed event listed as %v", ev)
	}
	if last["attempt"] != attempts || last["status_code"] != float64(500) || last["error"] != "answered 500 Internal Server Error" ||
		last["url"] != shown || last["next_attempt_at"] != nil {
		t.Fatalf("last attempt listed as %v, want attempt %v answered 500 at %s", last, attempts, shown)
	}

	r = c.run("webhook", "redeliver", "--event", eventID)
	var printed map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &printed); err != nil || strings.Count(strings.TrimSpace(r.stdout), "\n") != 0 {
		t.Fatalf("redeliver printed %q, want one JSON object", r.stdout)
	}
	last, _ = printed["last_attempt"].(map[string]any)
	if r.code != 1 || printed["state"] != "failed" || last == nil || last["attempt"] != attempts+1 || last["status_code"] != float64(500) {
		t.Fatalf("failed redelivery: exit %d, printed %v; want exit 1 and the event with attempt %v answered 500", r.code, printed, attempts+1)
	}
	var e map[string]string
	if strings.Count(r.stderr, "\n") != 1 || json.Unmarshal([]byte(r.stderr), &e) != nil || !strings.Contains(e["error"], "answered 500") {
		t.Fatalf("stderr %q, want one {\"error\"} line saying the merchant answered 500", r.stderr)
	}
	if strings.Contains(r.stdout+r.stderr, "s3cret") {
		t.Fatal("redeliver showed the URL's password")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(logins) != int(attempts)+1 || logins[len(logins)-1] != "ops:s3cret" {
		t.Fatalf("the merchant saw logins %v, want the URL's credentials on every attempt", logins)
	}
}
