package main

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/payoutd/payoutd/api"
	"github.com/payoutd/payoutd/internal/app"
	"github.com/payoutd/payoutd/internal/config"
	"github.com/payoutd/payoutd/internal/testenv"
	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/signature"
	"github.com/payoutd/payoutd/vendors/sandbox"
	"github.com/payoutd/payoutd/webhooks"
)

const newSecretsKey = "ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100"

// sealLegacy seals plaintext as versions before key ids did ("v1:", no
// associated data): what databases of those versions hold.
func sealLegacy(t *testing.T, hexKey, plaintext string) string {
	t.Helper()
	key, _ := hex.DecodeString(hexKey)
	block, _ := aes.NewCipher(key)
	aead, _ := cipher.NewGCM(block)
	nonce := make([]byte, aead.NonceSize())
	rand.Read(nonce)
	return "v1:" + base64.RawStdEncoding.EncodeToString(aead.Seal(nonce, nonce, []byte(plaintext), nil))
}

// clientRowText is every column of a client's row and of its credentials,
// as text: what a database reader sees.
func clientRowText(t *testing.T, db *gorm.DB, clientID string) string {
	t.Helper()
	var out []string
	for _, q := range []string{`SELECT * FROM clients WHERE id = ?`, `SELECT * FROM credentials WHERE client_id = ?`} {
		var rows []map[string]any
		if err := db.Raw(q, clientID).Scan(&rows).Error; err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			for k, v := range r {
				out = append(out, k+"="+strings.TrimSpace(strings.ReplaceAll(toText(v), "\n", " ")))
			}
		}
	}
	return strings.Join(out, " ")
}

func toText(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []byte:
		return string(x)
	case *string:
		if x != nil {
			return *x
		}
	}
	return ""
}

// receiver is a merchant's webhook endpoint that records what it got.
type receiver struct {
	server *httptest.Server
	mu     sync.Mutex
	got    []*http.Request
	bodies [][]byte
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{}
	r.server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.got, r.bodies = append(r.got, req), append(r.bodies, body)
		r.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(r.server.Close)
	return r
}

// deliverOne records an event for the client and delivers it with the
// deliverer the worker builds from env.
func deliverOne(t *testing.T, db *gorm.DB, env map[string]string, clientID string) models.WebhookAttempt {
	t.Helper()
	cfg, err := config.Load(func(k string) string { return env[k] }, config.Defaults())
	if err != nil {
		t.Fatal(err)
	}
	sealer, err := cfg.Sealer()
	if err != nil {
		t.Fatal(err)
	}
	var ev *models.WebhookEvent
	err = db.Transaction(func(tx *gorm.DB) (err error) {
		ev, err = webhooks.Record(tx, webhooks.NewEvent{ClientID: uuid.MustParse(clientID), Event: webhooks.DisbursementSuccess,
			SubjectID: uuid.New(), Target: models.TargetPayout, Data: map[string]string{}}, time.Now())
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	d := app.WebhookDeliverer(cfg, db, sealer, nil, nil)
	if err := d.Deliver(context.Background(), ev.ID); err != nil {
		t.Fatalf("deliver: %v", err)
	}
	attempts, err := d.Attempts(context.Background(), ev.ID)
	if err != nil || len(attempts) != 1 {
		t.Fatalf("%d attempts (%v), want 1", len(attempts), err)
	}
	return attempts[0]
}

// A webhook URL may carry the merchant's credentials (user:password, a
// token in the path or the query). None of it is stored in plain text; the
// operator sees scheme and host; the delivery still goes to the whole URL.
func TestWebhookURLsAreSealedAtRest(t *testing.T) {
	t.Parallel()
	db, url := testenv.DBWithURL(t)
	c := &cli{t: t, env: map[string]string{"DATABASE_URL": url, "SECRETS_KEY": testSecretsKey, "APP_ENV": "staging"}}
	r := newReceiver(t)
	hookURL := strings.Replace(r.server.URL, "http://", "http://hook:s3cret@", 1) + "/hooks/T0KEN42?sig=abc123"
	created := c.ok("client", "create", "--name", "Toko", "--payout-webhook-url", hookURL)
	clientID := created["client_id"].(string)
	updated := c.ok("client", "update", "--client", clientID, "--payment-webhook-url", "https://pay:pa55word@merchant.example/payments?key=K3Y")
	shown := c.ok("client", "show", "--client", clientID)

	hostShown := strings.Replace(r.server.URL, "http://", "http://xxxxx@", 1) + "/…"
	if shown["payout_webhook_url"] != hostShown || shown["payment_webhook_url"] != "https://xxxxx@merchant.example/…" ||
		updated["payment_webhook_url"] != "https://xxxxx@merchant.example/…" {
		t.Fatalf("operators see %v / %v", shown, updated)
	}
	stored := clientRowText(t, db, clientID)
	for _, secret := range []string{"s3cret", "T0KEN42", "abc123", "pa55word", "K3Y", created["signing_secret"].(string), created["callback_secret"].(string)} {
		if strings.Contains(stored, secret) {
			t.Fatalf("%q is stored in plain text: %s", secret, stored)
		}
	}

	attempt := deliverOne(t, db, c.env, clientID)
	if attempt.StatusCode == nil || *attempt.StatusCode != http.StatusNoContent {
		t.Fatalf("delivery %+v", attempt)
	}
	got := r.got[0]
	if user, pass, ok := got.BasicAuth(); !ok || user != "hook" || pass != "s3cret" || got.URL.Path != "/hooks/T0KEN42" || got.URL.RawQuery != "sig=abc123" {
		t.Fatalf("the merchant got %s %s (basic auth %v)", got.URL.Path, got.URL.RawQuery, ok)
	}
	if strings.Contains(attempt.URL, "T0KEN42") || strings.Contains(attempt.URL, "abc123") || strings.Contains(attempt.URL, "s3cret") {
		t.Fatalf("the attempt keeps the URL's secrets: %s", attempt.URL)
	}
}

// The operator's key rotation: every sealed value (signing and callback
// secrets of every credential, sealed webhook URLs, values of versions
// before key ids and plain-text webhook URLs) is resealed under the new
// SECRETS_KEY; the merchants' secrets and URLs keep working with only the
// new key; a second run finds nothing to do.
func TestSecretsRotateKey(t *testing.T) {
	t.Parallel()
	db, url := testenv.DBWithURL(t)
	c := &cli{t: t, env: map[string]string{"DATABASE_URL": url, "SECRETS_KEY": testSecretsKey, "APP_ENV": "staging"}}
	r := newReceiver(t)
	hookURL := strings.Replace(r.server.URL, "http://", "http://hook:s3cret@", 1) + "/hooks"

	alice := c.ok("client", "create", "--name", "Alice", "--payout-webhook-url", hookURL)
	alice = c.ok("client", "rotate-credentials", "--client", alice["client_id"].(string)) // leaves a revoked credential
	c.ok("client", "create", "--name", "Bob", "--no-signing-secret")
	// Legacy: a client as a database of an earlier version holds it.
	legacy := c.ok("client", "create", "--name", "Legacy")
	legacyID := legacy["client_id"].(string)
	if err := db.Exec(`UPDATE credentials SET signing_secret_enc = ?, callback_secret_enc = ? WHERE client_id = ?`,
		sealLegacy(t, testSecretsKey, legacy["signing_secret"].(string)), sealLegacy(t, testSecretsKey, legacy["callback_secret"].(string)), legacyID).Error; err != nil {
		t.Fatal(err)
	}
	if err := db.Exec(`UPDATE clients SET payout_webhook_url = ? WHERE id = ?`, hookURL, legacyID).Error; err != nil {
		t.Fatal(err)
	}

	// Before the rotation, the legacy values still work and reconcile names
	// them.
	if a := deliverOne(t, db, c.env, legacyID); a.StatusCode == nil {
		t.Fatalf("legacy delivery before the rotation: %+v", a)
	}
	rep := c.run("reconcile")
	if rep.code != 3 || !strings.Contains(rep.stdout, "rotate-key") {
		t.Fatalf("reconcile with legacy sealed values: exit %d %s", rep.code, rep.stdout)
	}

	c.env["SECRETS_KEY"] = newSecretsKey
	if msg := c.fails(1, "secrets", "rotate-key"); !strings.Contains(msg, "SECRETS_KEY_PREVIOUS") {
		t.Fatalf("rotate-key without the previous key: %q", msg)
	}
	c.env["SECRETS_KEY_PREVIOUS"] = testSecretsKey
	first := c.ok("secrets", "rotate-key")
	// alice: 2 credentials x 2 secrets + 1 URL; bob: 1 callback secret;
	// legacy: 2 secrets + 1 plain URL.
	if first["checked"] != float64(9) || first["resealed"] != float64(9) || first["legacy"] != float64(3) || first["already_current"] != float64(0) {
		t.Fatalf("first rotate-key: %v", first)
	}
	again := c.ok("secrets", "rotate-key")
	if again["checked"] != float64(9) || again["resealed"] != float64(0) || again["already_current"] != float64(9) || again["key_id"] != first["key_id"] {
		t.Fatalf("second rotate-key: %v", again)
	}
	delete(c.env, "SECRETS_KEY_PREVIOUS")
	if rep := c.ok("reconcile"); rep["ok"] != true {
		t.Fatalf("reconcile after the rotation: %v", rep)
	}
	for _, s := range []string{testSecretsKey, newSecretsKey} {
		if strings.Contains(clientRowText(t, db, legacyID)+clientRowText(t, db, alice["client_id"].(string)), s) {
			t.Fatal("a key is stored")
		}
	}

	// With only the new key: signed requests of every client verify, and
	// the legacy client's webhook goes out signed with its callback secret.
	srv := newAPI(t, db, c.env)
	for _, m := range []map[string]any{alice, legacy} {
		secret := m["signing_secret"].(string)
		req := httptest.NewRequest(http.MethodGet, "/api/v3/wallets", nil)
		req.Header.Set("x-api-key", m["api_key"].(string))
		req.Header.Set("x-signature", signature.Sign(secret, nil, time.Now()))
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			t.Fatalf("signed request of %s after the rotation: %d %s", m["client_id"], rec.Code, rec.Body)
		}
	}
	before := len(r.got)
	if a := deliverOne(t, db, c.env, legacyID); a.StatusCode == nil || *a.StatusCode != http.StatusNoContent {
		t.Fatalf("legacy client's delivery after the rotation: %+v", a)
	}
	got := r.got[before]
	if user, pass, _ := got.BasicAuth(); user != "hook" || pass != "s3cret" {
		t.Fatal("the legacy URL's credentials were lost")
	}
	if v := signature.Verify(legacy["callback_secret"].(string), got.Header.Get(webhooks.SignatureHeader), r.bodies[before], time.Now()); v.Diagnosis != signature.OK {
		t.Fatal("the webhook is not signed with the legacy client's callback secret")
	}
	if strings.Contains(clientRowText(t, db, legacyID), "s3cret") {
		t.Fatal("the legacy plain-text URL was not sealed")
	}
}

// newAPI is the API as `payoutd api` builds it from env, on db.
func newAPI(t *testing.T, db *gorm.DB, env map[string]string) *api.Server {
	t.Helper()
	cfg, err := config.Load(func(k string) string { return env[k] }, config.Defaults())
	if err != nil {
		t.Fatal(err)
	}
	sealer, err := cfg.Sealer()
	if err != nil {
		t.Fatal(err)
	}
	rdb, _ := testenv.Redis(t)
	srv, err := api.New(withServices(api.Deps{Config: cfg, DB: db, Redis: rdb, Sealer: sealer, Vendors: sandbox.Registry(sandbox.Options{})}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

// Sealed values swapped between two clients by a database writer: reconcile
// names both as problems, and rotate-key neither launders them under the
// new key nor stops at them; it exits 1 saying how many it left.
func TestSwappedSecretsAreReportedNotResealed(t *testing.T) {
	t.Parallel()
	db, url := testenv.DBWithURL(t)
	c := &cli{t: t, env: map[string]string{"DATABASE_URL": url, "SECRETS_KEY": testSecretsKey, "APP_ENV": "staging"}}
	a := c.ok("client", "create", "--name", "A")["client_id"].(string)
	b := c.ok("client", "create", "--name", "B")["client_id"].(string)
	sealed := map[string]string{}
	for _, id := range []string{a, b} {
		var v string
		if err := db.Raw(`SELECT callback_secret_enc FROM credentials WHERE client_id = ?`, id).Row().Scan(&v); err != nil {
			t.Fatal(err)
		}
		sealed[id] = v
	}
	for id, other := range map[string]string{a: b, b: a} {
		if err := db.Exec(`UPDATE credentials SET callback_secret_enc = ? WHERE client_id = ?`, sealed[other], id).Error; err != nil {
			t.Fatal(err)
		}
	}
	rep := c.run("reconcile")
	if rep.code != 3 || !strings.Contains(rep.stdout, "client "+a) || !strings.Contains(rep.stdout, "client "+b) || !strings.Contains(rep.stdout, "callback_secret cannot be opened") {
		t.Fatalf("reconcile after a swap: exit %d %s", rep.code, rep.stdout)
	}
	c.env["SECRETS_KEY"], c.env["SECRETS_KEY_PREVIOUS"] = newSecretsKey, testSecretsKey
	r := c.run("secrets", "rotate-key")
	if r.code != 1 || !strings.Contains(r.stdout, `"unreadable":2`) || !strings.Contains(r.stdout, `"resealed":2`) {
		t.Fatalf("rotate-key with swapped values: exit %d, stdout %s, stderr %s", r.code, r.stdout, r.stderr)
	}
	if strings.Count(r.stdout, "client "+a) != 1 || strings.Count(r.stdout, "client "+b) != 1 {
		t.Fatalf("rotate-key does not name the swapped values: %s", r.stdout)
	}
	first := strings.SplitN(r.stderr, "\n", 2)[0]
	if !strings.Contains(first, "2 sealed values could not be opened") {
		t.Fatalf("rotate-key's error line %q", first)
	}
}
