package main

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/payoutd/payoutd/internal/testenv"
	"github.com/payoutd/payoutd/models"
)

const testSecretsKey = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"

// cli runs `payoutd admin ...` in-process against one test database.
type cli struct {
	t   *testing.T
	env map[string]string
}

func newCLI(t *testing.T) *cli {
	t.Helper()
	_, url := testenv.DBWithURL(t)
	return &cli{t: t, env: map[string]string{"DATABASE_URL": url, "SECRETS_KEY": testSecretsKey, "APP_ENV": "staging"}}
}

type cliResult struct {
	code   int
	stdout string
	stderr string
	json   map[string]any
}

func (c *cli) run(args ...string) cliResult {
	c.t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), append([]string{"admin"}, args...), &out, &errOut, func(k string) string { return c.env[k] })
	r := cliResult{code: code, stdout: out.String(), stderr: errOut.String()}
	if code == 0 || code == 3 {
		if strings.Count(strings.TrimSpace(r.stdout), "\n") != 0 {
			c.t.Fatalf("admin %v: stdout must be exactly one JSON object, got %q", args, r.stdout)
		}
		if err := json.Unmarshal(out.Bytes(), &r.json); err != nil {
			c.t.Fatalf("admin %v: stdout is not a JSON object: %q", args, r.stdout)
		}
	}
	return r
}

func (c *cli) ok(args ...string) map[string]any {
	c.t.Helper()
	r := c.run(args...)
	if r.code != 0 {
		c.t.Fatalf("admin %v: exit %d, stderr %s", args, r.code, r.stderr)
	}
	return r.json
}

// fails checks the error contract: non-zero exit, nothing on stdout, one
// {"error": "..."} object first on stderr.
func (c *cli) fails(wantCode int, args ...string) string {
	c.t.Helper()
	r := c.run(args...)
	if r.code != wantCode {
		c.t.Fatalf("admin %v: exit %d, want %d (stderr %s)", args, r.code, wantCode, r.stderr)
	}
	if r.stdout != "" {
		c.t.Fatalf("admin %v: failed command wrote to stdout: %q", args, r.stdout)
	}
	var e map[string]string
	first := strings.SplitN(r.stderr, "\n", 2)[0]
	if err := json.Unmarshal([]byte(first), &e); err != nil || e["error"] == "" || len(e) != 1 {
		c.t.Fatalf("admin %v: stderr must start with {\"error\": ...}, got %q", args, r.stderr)
	}
	return e["error"]
}

func keysOf(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

var hex64 = regexp.MustCompile(`^[0-9a-f]{64}$`)

func TestAdminCLIContract(t *testing.T) {
	t.Parallel()
	c := newCLI(t)

	created := c.ok("client", "create", "--name", "Warung Maju", "--allowed-ips", "203.0.113.0/24,198.51.100.7",
		"--payout-webhook-url", "https://example.com/payouts")
	if got, want := keysOf(created), []string{"api_key", "callback_secret", "client_id", "signing_secret"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("client create fields %v, want %v", got, want)
	}
	if !strings.HasPrefix(created["api_key"].(string), "v3_test_") {
		t.Fatalf("staging key %q must start with v3_test_", created["api_key"])
	}
	if !hex64.MatchString(created["signing_secret"].(string)) || !hex64.MatchString(created["callback_secret"].(string)) {
		t.Fatalf("secrets must be 64 lowercase hex characters: %v", created)
	}
	clientID := created["client_id"].(string)

	noSecret := c.ok("client", "create", "--name", "No Secret", "--no-signing-secret")
	if v, present := noSecret["signing_secret"]; !present || v != nil {
		t.Fatalf("--no-signing-secret must give signing_secret null, got %v", noSecret)
	}

	rotated := c.ok("client", "rotate-credentials", "--client", clientID)
	if !reflect.DeepEqual(keysOf(rotated), keysOf(created)) || rotated["client_id"] != clientID {
		t.Fatalf("rotate-credentials fields %v", rotated)
	}
	for _, k := range []string{"api_key", "signing_secret", "callback_secret"} {
		if rotated[k] == created[k] {
			t.Fatalf("rotate-credentials must rotate %s", k)
		}
	}

	updated := c.ok("client", "update", "--client", clientID, "--withdrawals", "suspended", "--review-threshold", "50000000", "--allowed-ips", "")
	if updated["withdrawals"] != "suspended" || updated["review_threshold"] != "50000000" || len(updated["allowed_ips"].([]any)) != 0 {
		t.Fatalf("client update result %v", updated)
	}
	if updated["bifast_fee"] != "2500" || updated["rtol_fee"] != "6500" || updated["bifast_min_net"] != "10000" || updated["payment_fee_bps"] != float64(70) ||
		updated["refund_fee_on_return"] != false {
		t.Fatalf("client defaults not as models/client.go (docs/design.md, Fees and minimums): %v", updated)
	}
	// A bank's return keeps the fee unless the client's settings refund it.
	if got := c.ok("client", "update", "--client", clientID, "--refund-fee-on-return", "true"); got["refund_fee_on_return"] != true {
		t.Fatalf("--refund-fee-on-return true: %v", got)
	}
	if got := c.ok("client", "show", "--client", clientID); got["refund_fee_on_return"] != true {
		t.Fatalf("client show after --refund-fee-on-return true: %v", got)
	}
	if msg := c.fails(1, "client", "update", "--client", clientID, "--refund-fee-on-return", "yes"); !strings.Contains(msg, "--refund-fee-on-return: must be true or false") {
		t.Fatalf("--refund-fee-on-return yes: %q", msg)
	}
	c.ok("client", "update", "--client", clientID, "--refund-fee-on-return", "false")

	wallet := c.ok("wallet", "create", "--client", clientID, "--name", "Main", "--vendor", "simbank")
	if got := keysOf(wallet); !reflect.DeepEqual(got, []string{"name", "vendor", "wallet_id"}) || wallet["name"] != "Main" || wallet["vendor"] != "simbank" {
		t.Fatalf("wallet create result %v", wallet)
	}
	walletID := wallet["wallet_id"].(string)
	c.ok("wallet", "create", "--client", clientID, "--name", "Pending", "--vendor", "simwallet", "--provisioning")

	adjusted := c.ok("wallet", "adjust", "--wallet", walletID, "--amount", "100000", "--memo", "opening balance")
	if !reflect.DeepEqual(adjusted, map[string]any{"wallet_id": walletID, "balance": "100000.0000"}) {
		t.Fatalf("wallet adjust result %v", adjusted)
	}
	adjusted = c.ok("wallet", "adjust", "--wallet", walletID, "--amount", "-2500.25", "--memo", "correction")
	if adjusted["balance"] != "97499.7500" {
		t.Fatalf("balance after a negative adjustment %v", adjusted["balance"])
	}

	report := c.ok("reconcile")
	if report["ok"] != true || report["wallets_checked"] != float64(2) {
		t.Fatalf("reconcile %v", report)
	}
}

func TestAdminCLIErrors(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	clientID := c.ok("client", "create", "--name", "Toko")["client_id"].(string)
	walletID := c.ok("wallet", "create", "--client", clientID, "--name", "Main", "--vendor", "simbank")["wallet_id"].(string)

	c.fails(2, "frobnicate")
	c.fails(2, "client", "create", "--nme", "typo")
	c.fails(1, "client", "create", "--name", "   ")
	c.fails(1, "client", "create", "--name", "X", "--kind", "bank")
	c.fails(1, "client", "create", "--name", "X", "--allowed-ips", "10.0.0.0/33")
	c.fails(2, "client", "rotate-credentials")
	c.fails(2, "client", "rotate-credentials", "--client", "nope")
	if msg := c.fails(1, "client", "rotate-credentials", "--client", "6f1c2a9e-8d4b-4c3e-9a7f-1b2c3d4e5f60"); msg != "client not found" {
		t.Fatalf("rotate of an unknown client: %q", msg)
	}
	c.fails(2, "client", "update", "--client", clientID)
	c.fails(1, "client", "update", "--client", clientID, "--withdrawals", "paused")
	c.fails(1, "wallet", "create", "--client", clientID, "--name", "X", "--vendor", "bankofnowhere")
	c.fails(1, "wallet", "adjust", "--wallet", walletID, "--amount", "1e5", "--memo", "x")
	c.fails(1, "wallet", "adjust", "--wallet", walletID, "--amount", "0", "--memo", "x")
	c.fails(1, "wallet", "adjust", "--wallet", walletID, "--amount", "1.00001", "--memo", "x")
	c.fails(1, "wallet", "adjust", "--wallet", walletID, "--amount", "10", "--memo", "")
	if msg := c.fails(1, "wallet", "adjust", "--wallet", "6f1c2a9e-8d4b-4c3e-9a7f-1b2c3d4e5f60", "--amount", "10", "--memo", "x"); msg != "wallet not found" {
		t.Fatalf("adjust of an unknown wallet: %q", msg)
	}
	// Nothing of the refused adjustments reached the ledger.
	if r := c.ok("reconcile"); r["transactions_checked"] != float64(0) {
		t.Fatalf("refused commands wrote ledger transactions: %v", r)
	}
}

func TestAdminCLIProductionRequiresHTTPSWebhooks(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	c.env["APP_ENV"] = "production"
	c.fails(1, "client", "create", "--name", "X", "--payout-webhook-url", "http://example.com/hook")
	created := c.ok("client", "create", "--name", "X", "--payout-webhook-url", "https://example.com/hook")
	if !strings.HasPrefix(created["api_key"].(string), "v3_live_") {
		t.Fatalf("production key %q must start with v3_live_", created["api_key"])
	}
}

func TestAdminNeedsSecretsKey(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	delete(c.env, "SECRETS_KEY")
	if msg := c.fails(1, "client", "create", "--name", "X"); !strings.Contains(msg, "SECRETS_KEY is required") {
		t.Fatalf("missing SECRETS_KEY: %q", msg)
	}
}

func TestReconcileDetectsABalanceChangedOutsideTheLedger(t *testing.T) {
	t.Parallel()
	db, url := testenv.DBWithURL(t)
	c := &cli{t: t, env: map[string]string{"DATABASE_URL": url, "SECRETS_KEY": testSecretsKey, "APP_ENV": "staging"}}
	clientID := c.ok("client", "create", "--name", "Toko")["client_id"].(string)
	walletID := c.ok("wallet", "create", "--client", clientID, "--name", "Main", "--vendor", "simbank")["wallet_id"].(string)
	c.ok("wallet", "adjust", "--wallet", walletID, "--amount", "500", "--memo", "x")
	if err := db.Exec(`UPDATE wallets SET balance = balance + 1 WHERE id = ?`, walletID).Error; err != nil {
		t.Fatal(err)
	}
	r := c.run("reconcile")
	if r.code != 3 || r.json["ok"] != false {
		t.Fatalf("reconcile after tampering: exit %d, %s", r.code, r.stdout)
	}
	// Two invariants name it: the ledger's sum and the statement's last line.
	if problems := r.json["problems"].([]any); len(problems) != 2 || !strings.Contains(problems[0].(string), walletID) ||
		!strings.Contains(problems[1].(string), walletID) {
		t.Fatalf("problems %v", problems)
	}
}

// client show and client update print a webhook URL in its display form,
// without the credentials a merchant put in it; the stored row holds no
// more than that in plain text (TestWebhookURLsAreSealedAtRest).
func TestAdminClientCommandsHideWebhookURLCredentials(t *testing.T) {
	t.Parallel()
	db, url := testenv.DBWithURL(t)
	c := &cli{t: t, env: map[string]string{"DATABASE_URL": url, "SECRETS_KEY": testSecretsKey, "APP_ENV": "staging"}}
	secretURL := "https://hook:s3cret@merchant.example/payouts"
	clientID := c.ok("client", "create", "--name", "Toko", "--payout-webhook-url", secretURL)["client_id"].(string)
	shown := c.ok("client", "show", "--client", clientID)
	updated := c.ok("client", "update", "--client", clientID, "--payment-webhook-url", "https://pay:t0ken@merchant.example/payments")
	for name, out := range map[string]map[string]any{"show": shown, "update": updated} {
		if got := out["payout_webhook_url"]; got != "https://xxxxx@merchant.example/…" {
			t.Errorf("client %s payout_webhook_url = %v", name, got)
		}
	}
	if got := updated["payment_webhook_url"]; got != "https://xxxxx@merchant.example/…" {
		t.Errorf("client update payment_webhook_url = %v", got)
	}
	var stored models.Client
	if err := db.Where("id = ?", clientID).Take(&stored).Error; err != nil {
		t.Fatal(err)
	}
	if stored.PayoutWebhookURL != "https://xxxxx@merchant.example/…" || stored.PayoutWebhookURLEnc == "" || strings.Contains(stored.PayoutWebhookURLEnc, "s3cret") {
		t.Errorf("stored URL %q / %q, want the display form and the sealed URL", stored.PayoutWebhookURL, stored.PayoutWebhookURLEnc)
	}
}
