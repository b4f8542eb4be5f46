package admin_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/payoutd/payoutd/admin"
	"github.com/payoutd/payoutd/internal/app"
	"github.com/payoutd/payoutd/internal/config"
	"github.com/payoutd/payoutd/internal/testenv"
	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/payments"
	"github.com/payoutd/payoutd/payouts"
	"github.com/payoutd/payoutd/webhooks"
)

// The SECRETS_KEY of the tests, and the one a rotation moves to.
const (
	testSecretsKey = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
	newSecretsKey  = "ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100"
)

// harness runs admin commands through admin.Run on a test database of its
// own, with Deps built as `payoutd admin` builds them (internal/app, operator
// mode: no Redis, no metrics), and a clock the test can move.
type harness struct {
	t    *testing.T
	db   *gorm.DB
	env  map[string]string
	deps admin.Deps
	// offset moves the clock of the services and of the commands.
	offset atomic.Int64

	mu sync.Mutex
	// changed are the clients the commands said changed (ClientChanged).
	changed []uuid.UUID
	// transcript is every command run, with what it printed; issued are
	// the secrets client create and rotate-credentials printed.
	transcript []ran
	issued     []issuedSecret
}

type ran struct {
	args           []string
	code           int
	stdout, stderr string
}

type issuedSecret struct {
	value string
	by    int // index in transcript of the command that printed it
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	h := &harness{t: t, db: testenv.DB(t), env: map[string]string{"SECRETS_KEY": testSecretsKey, "APP_ENV": "staging"}}
	h.build()
	t.Cleanup(h.checkSecretsShownOnce)
	return h
}

// setEnv changes the configuration and builds Deps again from it, as a
// new `payoutd admin` process with that environment would.
func (h *harness) setEnv(name, value string) {
	h.t.Helper()
	if value == "" {
		delete(h.env, name)
	} else {
		h.env[name] = value
	}
	h.build()
}

func (h *harness) build() {
	h.t.Helper()
	cfg, err := config.Load(func(k string) string { return h.env[k] }, config.Defaults())
	if err != nil {
		h.t.Fatal(err)
	}
	sealer, err := cfg.Sealer()
	if err != nil {
		h.t.Fatal(err)
	}
	vendorRegistry, err := app.VendorRegistry(cfg, h.db)
	if err != nil {
		h.t.Fatal(err)
	}
	acquirer, err := app.Acquirer(cfg)
	if err != nil {
		h.t.Fatal(err)
	}
	po, _, pa := app.NewServices(app.Parts{Config: cfg, DB: h.db, Vendors: vendorRegistry, Acquirer: acquirer, Now: h.now})
	h.deps = admin.Deps{DB: h.db, Sealer: sealer, Env: cfg.Env, Vendors: vendorRegistry, Payouts: po, Payments: pa,
		Webhooks: app.WebhookDeliverer(cfg, h.db, sealer, nil, nil), Now: h.now,
		ClientChanged: func(_ context.Context, id uuid.UUID) {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.changed = append(h.changed, id)
		}}
}

func (h *harness) now() time.Time { return time.Now().Add(time.Duration(h.offset.Load())) }

// advance moves the clock of the services and the commands by d.
func (h *harness) advance(d time.Duration) { h.offset.Add(int64(d)) }

// run runs `payoutd admin <args>` and records what it printed.
func (h *harness) run(args ...string) ran {
	h.t.Helper()
	var stdout, stderr bytes.Buffer
	code := admin.Run(context.Background(), h.deps, args, &stdout, &stderr)
	r := ran{args: args, code: code, stdout: stdout.String(), stderr: stderr.String()}
	h.mu.Lock()
	h.transcript = append(h.transcript, r)
	h.mu.Unlock()
	return r
}

// ok runs a command that must succeed: exit 0, stdout exactly one JSON
// object meeting the command's contract (contracts), nothing on stderr.
func (h *harness) ok(args ...string) map[string]any {
	h.t.Helper()
	r := h.run(args...)
	if r.code != 0 {
		h.t.Fatalf("admin %s: exit %d, want 0; stderr %s", strings.Join(args, " "), r.code, r.stderr)
	}
	if r.stderr != "" {
		h.t.Fatalf("admin %s: succeeded but wrote to stderr: %q", strings.Join(args, " "), r.stderr)
	}
	out := oneObject(h.t, args, r.stdout)
	checkContract(h.t, commandOf(h.t, args), out)
	if name := commandOf(h.t, args); name == "client create" || name == "client rotate-credentials" {
		h.mu.Lock()
		for _, k := range []string{"api_key", "signing_secret", "callback_secret"} {
			if s, _ := out[k].(string); s != "" {
				h.issued = append(h.issued, issuedSecret{value: s, by: len(h.transcript) - 1})
			}
		}
		h.mu.Unlock()
	}
	return out
}

// oneObject decodes stdout, which must be exactly one JSON object on one
// line.
func oneObject(t *testing.T, args []string, stdout string) map[string]any {
	t.Helper()
	if !strings.HasSuffix(stdout, "\n") || strings.Count(stdout, "\n") != 1 {
		t.Fatalf("admin %s: stdout must be one JSON object on one line, got %q", strings.Join(args, " "), stdout)
	}
	dec := json.NewDecoder(strings.NewReader(stdout))
	var out map[string]any
	if err := dec.Decode(&out); err != nil || out == nil {
		t.Fatalf("admin %s: stdout is not a JSON object (%v): %q", strings.Join(args, " "), err, stdout)
	}
	if _, err := dec.Token(); err != io.EOF {
		t.Fatalf("admin %s: more than one JSON value on stdout: %q", strings.Join(args, " "), stdout)
	}
	return out
}

// fails runs a command that must fail with exit code and the error
// message want: nothing on stdout, and stderr's first line exactly
// {"error": want}. It returns stderr's other lines.
func (h *harness) fails(code int, want string, args ...string) []string {
	h.t.Helper()
	r := h.run(args...)
	if r.code != code {
		h.t.Fatalf("admin %s: exit %d, want %d; stdout %q, stderr %q", strings.Join(args, " "), r.code, code, r.stdout, r.stderr)
	}
	if r.stdout != "" {
		h.t.Fatalf("admin %s: a failed command wrote to stdout: %q", strings.Join(args, " "), r.stdout)
	}
	return errorLines(h.t, args, r.stderr, want)
}

// errorLines checks that stderr starts with the line {"error": want} (no
// other field) and returns the lines after it.
func errorLines(t *testing.T, args []string, stderr, want string) []string {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
	var e map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &e); err != nil || len(e) != 1 {
		t.Fatalf("admin %s: stderr must start with {\"error\": ...} alone, got %q", strings.Join(args, " "), stderr)
	}
	if got, _ := e["error"].(string); got != want {
		t.Fatalf("admin %s: error %q, want %q", strings.Join(args, " "), got, want)
	}
	return lines[1:]
}

// usageError runs a command line that is wrong: exit 2, the error, then
// the command's usage line (as admin.Usage lists it).
func (h *harness) usageError(want string, args ...string) {
	h.t.Helper()
	rest := h.fails(2, want, args...)
	wantUsage := "usage: payoutd admin " + usageLine(h.t, commandOf(h.t, args))
	if len(rest) != 1 || strings.TrimSpace(rest[0]) != wantUsage {
		h.t.Fatalf("admin %s: after the error want the one line %q, got %q", strings.Join(args, " "), wantUsage, rest)
	}
}

// usageLine is the command's line of admin.Usage(), "client show --client ID".
func usageLine(t *testing.T, name string) string {
	t.Helper()
	for _, line := range strings.Split(admin.Usage(), "\n") {
		line = strings.TrimSpace(line)
		if line == name || strings.HasPrefix(line, name+" ") {
			return line
		}
	}
	t.Fatalf("admin.Usage() does not list %q", name)
	return ""
}

// commandOf is the command (in the table of admin/cli.go) args run.
func commandOf(t *testing.T, args []string) string {
	t.Helper()
	for n := 2; n >= 1; n-- {
		if len(args) >= n {
			if name := strings.Join(args[:n], " "); contracts[name] != nil {
				return name
			}
		}
	}
	t.Fatalf("no contract for admin %s", strings.Join(args, " "))
	return ""
}

// checkSecretsShownOnce fails the test if a key or secret that client
// create or rotate-credentials printed appears anywhere else: in another
// command's output, or on stderr.
func (h *harness) checkSecretsShownOnce() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, s := range h.issued {
		for i, r := range h.transcript {
			if i != s.by && strings.Contains(r.stdout+r.stderr, s.value) {
				h.t.Errorf("a secret printed by admin %s shows again in admin %s: %s%s",
					strings.Join(h.transcript[s.by].args, " "), strings.Join(r.args, " "), r.stdout, r.stderr)
			}
		}
		if strings.Contains(h.transcript[s.by].stderr, s.value) {
			h.t.Errorf("admin %s printed a secret on stderr", strings.Join(h.transcript[s.by].args, " "))
		}
	}
}

// Fixtures: what the commands act on, made as the api and the worker
// would make it.

// merchant creates a client and its default simbank wallet holding
// funds, through the commands.
func (h *harness) merchant(funds string) (client, wallet string) {
	h.t.Helper()
	client = h.ok("client", "create", "--name", "Toko Maju")["client_id"].(string)
	wallet = h.ok("wallet", "create", "--client", client, "--name", "Main", "--vendor", "simbank")["wallet_id"].(string)
	if funds != "" {
		h.ok("wallet", "adjust", "--wallet", wallet, "--amount", funds, "--memo", "opening balance")
	}
	return client, wallet
}

func (h *harness) client(id string) *models.Client {
	h.t.Helper()
	c, err := models.NewStore(h.db).FindClient(context.Background(), uuid.MustParse(id))
	if err != nil {
		h.t.Fatal(err)
	}
	return c
}

// payout creates a disbursement of 100,000 IDR (BIFAST, bca) to account
// with the service the api runs, reference "inv-<account>".
func (h *harness) payout(client, wallet, account string) *models.Disbursement {
	h.t.Helper()
	ref := "inv-" + account
	created, err := h.deps.Payouts.Create(context.Background(), h.client(client), payouts.CreateRequest{
		IdempotencyKey: uuid.NewString(), ReferenceID: &ref,
		Params: payouts.Params{WalletID: uuid.MustParse(wallet), Amount: models.Rupiah(100_000), BankCode: "bca",
			AccountNo: account, TransferType: models.BIFAST}})
	if err != nil {
		h.t.Fatalf("create payout to %s: %v", account, err)
	}
	return created.Disbursement
}

// requested is a payout the sandbox vendor accepted and keeps REQUESTED
// until it is completed by hand (account 1000000005).
func (h *harness) requested(client, wallet string) *models.Disbursement {
	h.t.Helper()
	d := h.payout(client, wallet, "1000000005")
	ctx := context.Background()
	if err := h.deps.Payouts.Submit(ctx, d.ID); err != nil {
		h.t.Fatal(err)
	}
	got, err := h.deps.Payouts.Get(ctx, d.ID)
	if err != nil || got.Status != models.StatusRequested {
		h.t.Fatalf("payout after submit: %v %v, want REQUESTED", got, err)
	}
	return got
}

// payment creates a PENDING payment of price IDR for the client's default
// wallet, expiring in an hour.
func (h *harness) payment(client string, price int64) uuid.UUID {
	h.t.Helper()
	p, err := h.deps.Payments.Create(context.Background(), h.client(client), payments.CreateRequest{
		Price: models.Rupiah(price), PayerID: "player-7", Flow: models.PaymentFlowEmbed, ExpiresIn: time.Hour})
	if err != nil {
		h.t.Fatal(err)
	}
	return p.ID
}

// lateResult records what a vendor's contradicting callback records for
// d: the vendor reports FAILED for a payout stored as SUCCESS.
func (h *harness) lateResult(d *models.Disbursement) int64 {
	h.t.Helper()
	now := h.now().UTC()
	r := models.DisbursementLateResult{DisbursementID: d.ID, Vendor: d.Vendor, VendorReference: d.VendorReference,
		StoredStatus: models.StatusSuccess, ReportedStatus: "FAILED", Reason: "recipient bank returned the transfer",
		Source: models.SourceCallback, FirstSeenAt: now, LastSeenAt: now, SeenCount: 2}
	if err := h.db.Create(&r).Error; err != nil {
		h.t.Fatal(err)
	}
	return r.ID
}

// webhookEvent records a disbursement.success event for the client, as a
// payout's state change does.
func (h *harness) webhookEvent(client string) *models.WebhookEvent {
	h.t.Helper()
	var ev *models.WebhookEvent
	err := h.db.Transaction(func(tx *gorm.DB) (err error) {
		ev, err = webhooks.Record(tx, webhooks.NewEvent{ClientID: uuid.MustParse(client), Event: webhooks.DisbursementSuccess,
			SubjectID: uuid.New(), Target: models.TargetPayout, Data: map[string]string{"status": "SUCCESS"}}, h.now())
		return err
	})
	if err != nil {
		h.t.Fatal(err)
	}
	return ev
}
