package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/payoutd/payoutd/vendors/snap"
	"github.com/payoutd/payoutd/vendors/snap/snapsim"
	"github.com/payoutd/payoutd/vendors/xendit/xenditsim"
)

// The rail check's test credentials: long enough that finding one in the
// output cannot be chance.
const (
	rcXenditKey    = "xnd_development_RAILCHECKsecretKEY0123456789"
	rcXenditLive   = "xnd_production_RAILCHECKliveKEY0123456789"
	rcXenditToken  = "railcheck-callback-TOKEN-0123456789"
	rcSnapPartner  = "RAILCHECK01"
	rcSnapKey      = "railcheck-client-key"
	rcSnapSecret   = "railcheck-client-SECRET-0123456789"
	rcSnapChannel  = "95221"
	rcSnapSource   = "8880009999"
	rcSnapBankSlug = "bca"
)

// rcReport is the report as a script reads it.
type rcReport struct {
	Vendor string   `json:"vendor"`
	OK     bool     `json:"ok"`
	Mode   string   `json:"mode"`
	Steps  []rcStep `json:"steps"`
}

type rcStep struct {
	Step      string         `json:"step"`
	OK        bool           `json:"ok"`
	Status    string         `json:"status"`
	Detail    string         `json:"detail"`
	Warning   string         `json:"warning"`
	Error     string         `json:"error"`
	Fix       string         `json:"fix"`
	Data      map[string]any `json:"data"`
	ElapsedMS *int64         `json:"elapsed_ms"`
}

func (r rcReport) step(t *testing.T, name string) rcStep {
	t.Helper()
	for _, s := range r.Steps {
		if s.Step == name {
			return s
		}
	}
	t.Fatalf("no step %q in %+v", name, r)
	return rcStep{}
}

// rcResult is one run of `payoutd admin rail check`.
type rcResult struct {
	code           int
	stdout, stderr string
	report         rcReport
}

// railCheck runs `payoutd admin rail check args...` with env (no database:
// the check needs none) and parses the report; the output must never show
// a secret of the environment.
func railCheck(t *testing.T, env map[string]string, args ...string) rcResult {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), append([]string{"admin", "rail", "check"}, args...), &stdout, &stderr, func(k string) string { return env[k] })
	r := rcResult{code: code, stdout: stdout.String(), stderr: stderr.String()}
	for _, secret := range []string{rcXenditKey, rcXenditLive, rcXenditToken, rcSnapSecret} {
		if strings.Contains(r.stdout+r.stderr, secret) {
			t.Fatalf("rail check %v printed a secret:\n%s\n%s", args, r.stdout, r.stderr)
		}
	}
	if code == 2 {
		return r
	}
	if strings.Count(strings.TrimSpace(r.stdout), "\n") != 0 {
		t.Fatalf("rail check %v: stdout must be one JSON object, got %q", args, r.stdout)
	}
	if err := json.Unmarshal(stdout.Bytes(), &r.report); err != nil {
		t.Fatalf("rail check %v: stdout is not a report: %v\n%s", args, err, r.stdout)
	}
	var names []string
	for _, s := range r.report.Steps {
		names = append(names, s.Step)
		if s.ElapsedMS == nil || s.OK != (s.Status == "ok") {
			t.Errorf("step %+v: want elapsed_ms, and ok exactly when status is ok", s)
		}
	}
	if got := strings.Join(names, ","); got != "config,connect,auth,channels,inquiry,payout" {
		t.Fatalf("steps %s", got)
	}
	failed := strings.Contains(r.stdout, `"status":"failed"`)
	switch {
	case r.report.OK == failed, (code == 0) != r.report.OK:
		t.Fatalf("rail check %v: exit %d with ok %v and a failed step %v:\n%s", args, code, r.report.OK, failed, r.stdout)
	case code == 1 && !strings.HasPrefix(r.stderr, `{"error":"rail check of `):
		t.Fatalf("rail check %v: a failure must say so on stderr, got %q", args, r.stderr)
	}
	return r
}

// wantSkippedAfter checks that every step after failed was skipped.
func (r rcResult) wantSkippedAfter(t *testing.T, failed string) {
	t.Helper()
	after := false
	for _, s := range r.report.Steps {
		if after && s.Status != "skipped" {
			t.Errorf("step %s after the failed %s: %s, want skipped", s.Step, failed, s.Status)
		}
		after = after || s.Step == failed
	}
}

// countingHandler counts the payout creates h receives.
func countingHandler(h http.Handler, creates *atomic.Int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && (r.URL.Path == "/v2/payouts" || r.URL.Path == snap.PathTransfer) {
			creates.Add(1)
		}
		h.ServeHTTP(w, r)
	})
}

// startXenditSim serves a Xendit simulator that knows key.
func startXenditSim(t *testing.T, key string, creates *atomic.Int64) (*xenditsim.Server, string) {
	t.Helper()
	sim, err := xenditsim.New(xenditsim.Options{SecretKey: key, CallbackToken: rcXenditToken, CompleteAfter: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(countingHandler(sim, creates))
	t.Cleanup(srv.Close)
	return sim, srv.URL
}

func xenditEnv(url, key, appEnv string) map[string]string {
	return map[string]string{"APP_ENV": appEnv, "XENDIT_SECRET_KEY": key, "XENDIT_CALLBACK_TOKEN": rcXenditToken, "XENDIT_BASE_URL": url}
}

// startSnapSim serves a SNAP bank that knows the platform's public key
// and rcSnapSecret.
func startSnapSim(t *testing.T, platform *rsa.PublicKey, creates *atomic.Int64) (*snapsim.Bank, string) {
	t.Helper()
	bank := snapsim.New(snapsim.Options{PartnerPublicKey: platform, ClientKey: rcSnapKey, ClientSecret: rcSnapSecret,
		PartnerID: rcSnapPartner, SourceAccountNo: rcSnapSource, CompleteAfter: 20 * time.Millisecond})
	srv := httptest.NewServer(countingHandler(bank, creates))
	t.Cleanup(srv.Close)
	return bank, srv.URL
}

// snapEnv configures snap:bca at url with the platform key signing and
// the bank's key verifying, as an operator does.
func snapEnv(t *testing.T, url string, signing *rsa.PrivateKey, appEnv string) map[string]string {
	t.Helper()
	_, bankKey := snapRailKeys()
	dir := t.TempDir()
	return map[string]string{"APP_ENV": appEnv, "SNAP_BANKS": rcSnapBankSlug, "SNAP_BCA_BASE_URL": url,
		"SNAP_BCA_PARTNER_ID": rcSnapPartner, "SNAP_BCA_CLIENT_KEY": rcSnapKey, "SNAP_BCA_CLIENT_SECRET": rcSnapSecret,
		"SNAP_BCA_CHANNEL_ID": rcSnapChannel, "SNAP_BCA_SOURCE_ACCOUNT": rcSnapSource,
		"SNAP_BCA_PRIVATE_KEY_FILE":     writePEM(t, dir, "platform.pem", "PRIVATE KEY", mustPKCS8(t, signing)),
		"SNAP_BCA_BANK_PUBLIC_KEY_FILE": writePEM(t, dir, "bank.pem", "PUBLIC KEY", mustPKIX(t, &bankKey.PublicKey))}
}

// wantPaid checks the payout step: paid, followed to SUCCESS, once.
func wantPaid(t *testing.T, r rcResult, payouts func(ref string) int) {
	t.Helper()
	p := r.report.step(t, "payout")
	ref, _ := p.Data["reference"].(string)
	statuses, _ := p.Data["statuses"].([]any)
	if p.Status != "ok" || !strings.HasPrefix(ref, "railcheck-") || len(statuses) == 0 || statuses[len(statuses)-1] != "SUCCESS" {
		t.Fatalf("payout step %+v: want a railcheck- reference followed to SUCCESS", p)
	}
	if n := payouts(ref); n != 1 {
		t.Errorf("the provider holds %d payouts for %s, want 1", n, ref)
	}
}

// A configured Xendit rail in test mode passes every step, the test
// payout included, with no database; the inquiry says the rail needs a
// holder-name source.
func TestRailCheckXenditPasses(t *testing.T) {
	t.Parallel()
	var creates atomic.Int64
	sim, url := startXenditSim(t, rcXenditKey, &creates)
	r := railCheck(t, xenditEnv(url, rcXenditKey, "staging"), "--vendor", "xendit")
	if r.code != 0 || r.report.Vendor != "xendit" || r.report.Mode != "test" {
		t.Fatalf("exit %d, report %s", r.code, r.stdout)
	}
	for _, s := range r.report.Steps {
		if s.Status != "ok" {
			t.Errorf("step %s: %s (%s)", s.Step, s.Status, s.Error)
		}
	}
	if ch := r.report.step(t, "channels"); ch.Data["covered"] != float64(19) {
		t.Errorf("channels %+v: want the simulator's 19 channels payoutd has codes for", ch)
	}
	if inq := r.report.step(t, "inquiry"); inq.Data["holder_name"] != "" || !strings.Contains(inq.Warning, "needs a holder-name source") {
		t.Errorf("inquiry %+v: Xendit tells no holder name, and the report must say the rail needs a source for it", inq)
	}
	wantPaid(t, r, sim.Payouts)
	if creates.Load() != 1 {
		t.Errorf("%d creates, want 1", creates.Load())
	}
}

// A configured SNAP bank in test mode passes every step: the inquiry
// tells the holder name, the test payout is paid.
func TestRailCheckSnapPasses(t *testing.T) {
	t.Parallel()
	platform, _ := snapRailKeys()
	var creates atomic.Int64
	bank, url := startSnapSim(t, &platform.PublicKey, &creates)
	r := railCheck(t, snapEnv(t, url, platform, "staging"), "--vendor", "snap:bca")
	if r.code != 0 || r.report.Vendor != "snap:bca" || r.report.Mode != "test" {
		t.Fatalf("exit %d, report %s", r.code, r.stdout)
	}
	if inq := r.report.step(t, "inquiry"); inq.Data["holder_name"] != "SANDBOX 7890" || inq.Data["bank"] != "bri" {
		t.Errorf("inquiry %+v: want bri's test account held by SANDBOX 7890", inq)
	}
	wantPaid(t, r, bank.SubmitCalls)
}

// A key Xendit does not know fails the auth step with the fix, and
// nothing after it runs.
func TestRailCheckXenditWrongKey(t *testing.T) {
	t.Parallel()
	var creates atomic.Int64
	_, url := startXenditSim(t, "xnd_development_the-simulators-own-key-000", &creates)
	r := railCheck(t, xenditEnv(url, rcXenditKey, "staging"), "--vendor", "xendit")
	auth := r.report.step(t, "auth")
	if r.code != 1 || auth.Status != "failed" || !strings.Contains(auth.Error, "Xendit refused the secret key") ||
		!strings.Contains(auth.Fix, "XENDIT_SECRET_KEY") {
		t.Fatalf("exit %d, auth %+v", r.code, auth)
	}
	r.wantSkippedAfter(t, "auth")
	if creates.Load() != 0 {
		t.Errorf("%d payouts created after a refused key", creates.Load())
	}
}

// SNAP credentials the bank refuses fail the auth step with the fix of
// the one that is wrong: the client secret (service signatures) or the
// key pair (the access token's signature).
func TestRailCheckSnapWrongCredentials(t *testing.T) {
	t.Parallel()
	platform, _ := snapRailKeys()
	stranger, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name       string
		change     func(env map[string]string)
		want, not  string
		wantDetail string
	}{
		{"wrong client secret", func(env map[string]string) { env["SNAP_BCA_CLIENT_SECRET"] = "railcheck-WRONG-secret-0123456789" },
			"SNAP_BCA_CLIENT_SECRET", "PRIVATE_KEY", "refused the signature of a service call"},
		{"wrong key pair", func(env map[string]string) {
			env["SNAP_BCA_PRIVATE_KEY_FILE"] = writePEM(t, t.TempDir(), "stranger.pem", "PRIVATE KEY", mustPKCS8(t, stranger))
		}, "SNAP_BCA_PRIVATE_KEY", "CLIENT_SECRET", "access-token request's signature"},
		{"wrong client key", func(env map[string]string) { env["SNAP_BCA_CLIENT_KEY"] = "railcheck-unknown-client" },
			"SNAP_BCA_CLIENT_KEY", "CLIENT_SECRET", "does not know the client key"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var creates atomic.Int64
			_, url := startSnapSim(t, &platform.PublicKey, &creates)
			env := snapEnv(t, url, platform, "staging")
			tt.change(env)
			r := railCheck(t, env, "--vendor", "snap:bca")
			auth := r.report.step(t, "auth")
			if r.code != 1 || auth.Status != "failed" || !strings.Contains(auth.Error, tt.wantDetail) ||
				!strings.Contains(auth.Fix, tt.want) || strings.Contains(auth.Fix, tt.not) {
				t.Fatalf("exit %d, auth %+v: want a fix naming %s and not %s", r.code, auth, tt.want, tt.not)
			}
			r.wantSkippedAfter(t, "auth")
			if creates.Load() != 0 {
				t.Errorf("%d transfers after refused credentials", creates.Load())
			}
		})
	}
}

// closedPort is a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// A provider out of reach fails the connect step, naming host:port and
// the setting to check.
func TestRailCheckUnreachable(t *testing.T) {
	t.Parallel()
	platform, _ := snapRailKeys()
	for _, tt := range []struct {
		vendor, urlVar string
		env            func(url string) map[string]string
	}{
		{"xendit", "XENDIT_BASE_URL", func(url string) map[string]string { return xenditEnv(url, rcXenditKey, "staging") }},
		{"snap:bca", "SNAP_BCA_BASE_URL", func(url string) map[string]string { return snapEnv(t, url, platform, "staging") }},
	} {
		addr := closedPort(t)
		r := railCheck(t, tt.env("http://"+addr), "--vendor", tt.vendor)
		c := r.report.step(t, "connect")
		if r.code != 1 || c.Status != "failed" || !strings.Contains(c.Error, "could not reach "+addr) || !strings.Contains(c.Fix, tt.urlVar) {
			t.Errorf("%s: exit %d, connect %+v: want could not reach %s and a fix naming %s", tt.vendor, r.code, c, addr, tt.urlVar)
		}
		r.wantSkippedAfter(t, "connect")
	}
}

// In live mode (a live Xendit key; SNAP with APP_ENV=production) the
// payout step never pays: skipped unless asked for, refused when asked.
func TestRailCheckLiveModeRefusesPayout(t *testing.T) {
	t.Parallel()
	platform, _ := snapRailKeys()
	for _, tt := range []struct {
		vendor string
		start  func(creates *atomic.Int64) map[string]string
	}{
		{"xendit", func(creates *atomic.Int64) map[string]string {
			_, url := startXenditSim(t, rcXenditLive, creates)
			return xenditEnv(url, rcXenditLive, "production")
		}},
		{"snap:bca", func(creates *atomic.Int64) map[string]string {
			_, url := startSnapSim(t, &platform.PublicKey, creates)
			return snapEnv(t, url, platform, "production")
		}},
	} {
		var creates atomic.Int64
		env := tt.start(&creates)
		r := railCheck(t, env, "--vendor", tt.vendor)
		if p := r.report.step(t, "payout"); r.code != 0 || r.report.Mode != "live" || p.Status != "skipped" || !strings.Contains(p.Detail, "real money") {
			t.Errorf("%s live without --pay: exit %d, mode %s, payout %+v; want exit 0 and the payout skipped", tt.vendor, r.code, r.report.Mode, p)
		}
		if inq := r.report.step(t, "inquiry"); inq.Status != "skipped" {
			t.Errorf("%s live without --account: inquiry %+v, want skipped (no test account to look up)", tt.vendor, inq)
		}
		r = railCheck(t, env, "--vendor", tt.vendor, "--pay", "10000", "--bank", "bri", "--account", "1234567890")
		p := r.report.step(t, "payout")
		if r.code != 1 || p.Status != "failed" || !strings.HasPrefix(p.Error, "refused: ") || !strings.Contains(p.Error, "real money") {
			t.Errorf("%s live with --pay: exit %d, payout %+v; want the payout refused", tt.vendor, r.code, p)
		}
		if inq := r.report.step(t, "inquiry"); inq.Status != "ok" {
			t.Errorf("%s live with --account: inquiry %+v, want it run", tt.vendor, inq)
		}
		if creates.Load() != 0 {
			t.Errorf("%s: %d payouts created in live mode", tt.vendor, creates.Load())
		}
	}
}

// The configuration step reports the loader's own errors about the rail,
// and a rail that is not configured at all; the command line is checked
// before anything runs.
func TestRailCheckConfigurationAndUsage(t *testing.T) {
	t.Parallel()
	r := railCheck(t, map[string]string{"APP_ENV": "staging", "XENDIT_SECRET_KEY": rcXenditKey}, "--vendor", "xendit")
	if c := r.report.step(t, "config"); r.code != 1 || c.Status != "failed" || !strings.Contains(c.Error, "XENDIT_CALLBACK_TOKEN is required") {
		t.Errorf("exit %d, config %+v: want the loader's message", r.code, c)
	}
	r.wantSkippedAfter(t, "config")
	r = railCheck(t, map[string]string{"APP_ENV": "staging"}, "--vendor", "snap:bca")
	if c := r.report.step(t, "config"); r.code != 1 || !strings.Contains(c.Error, "SNAP_BANKS does not list bca") {
		t.Errorf("exit %d, config %+v", r.code, c)
	}
	for _, args := range [][]string{{}, {"--vendor", "simbank"}, {"--vendor", "snap:dana"}, {"--vendor", "xendit", "--pay", "-5"},
		{"--vendor", "xendit", "--pay", "10000", "--no-pay"}, {"--vendor", "xendit", "extra"}} {
		r := railCheck(t, nil, args...)
		if r.code != 2 || r.stdout != "" || !strings.HasPrefix(r.stderr, `{"error":`) || !strings.Contains(r.stderr, "usage: payoutd admin rail check") {
			t.Errorf("rail check %v: exit %d, stdout %q, stderr %q; want 2 and the usage", args, r.code, r.stdout, r.stderr)
		}
	}
}
