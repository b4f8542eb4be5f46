// Package railcheck checks one configured payout rail (Xendit, or a bank
// over SNAP BI) with the environment the api and the worker read, as
// `payoutd admin rail check` reports it: the configuration, a connection
// to the provider, the credentials, the bank list, an account inquiry and,
// in the provider's test mode only, one small payout followed to its end.
// Each step says what it saw and, when it fails, what to fix; a step after
// a failed one is skipped. No secret is ever in the report.
package railcheck

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/payoutd/payoutd/internal/config"
	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors"
	"github.com/payoutd/payoutd/vendors/snap"
	"github.com/payoutd/payoutd/vendors/xendit"
)

// The steps, in the order they run.
const (
	StepConfig   = "config"
	StepConnect  = "connect"
	StepAuth     = "auth"
	StepChannels = "channels"
	StepInquiry  = "inquiry"
	StepPayout   = "payout"
)

// What became of a step.
const (
	StatusOK      = "ok"
	StatusFailed  = "failed"
	StatusSkipped = "skipped" // not run: an earlier step failed, or not asked for
)

// Defaults of Options.
const (
	DefaultWait = 60 * time.Second
	// DefaultHolder is the holder name a test payout is sent with when the
	// rail's inquiry tells none (Xendit): its test mode pays "any
	// account_holder_name".
	DefaultHolder = "PAYOUTD RAIL CHECK"
)

// DefaultAmount is the test payout's amount: 10,000 IDR, the smallest
// payout Xendit's channels take (amount_limits.minimum of "Get payout
// channels", https://docs.xendit.co/apidocs/get-payout-channels).
var DefaultAmount = models.Rupiah(10_000)

// Step is one step of the report.
type Step struct {
	Step   string `json:"step"`
	OK     bool   `json:"ok"`
	Status string `json:"status"`
	// Detail says what the step saw; Warning what works but deserves a
	// look; Error why it failed and Fix what to change.
	Detail  string `json:"detail,omitempty"`
	Warning string `json:"warning,omitempty"`
	Error   string `json:"error,omitempty"`
	Fix     string `json:"fix,omitempty"`
	// Data are the step's findings for scripts (holder_name, reference,
	// statuses, ...): strings, numbers and lists of strings.
	Data      map[string]any `json:"data,omitempty"`
	ElapsedMS int64          `json:"elapsed_ms"`
}

// Report is the outcome of a check: OK when no step failed (a step skipped
// because it was not asked for, such as the payout in live mode, is no
// failure).
type Report struct {
	Vendor string `json:"vendor"`
	OK     bool   `json:"ok"`
	// Mode is "test" when the provider moves no money with these
	// credentials, "live" otherwise; empty when the configuration failed.
	Mode  string `json:"mode,omitempty"`
	Steps []Step `json:"steps"`
}

// Failure is the first failed step as one sentence; "" when r is OK.
func (r Report) Failure() string {
	for _, s := range r.Steps {
		if s.Status == StatusFailed {
			return fmt.Sprintf("rail check of %s failed at step %s: %s", r.Vendor, s.Step, s.Error)
		}
	}
	return ""
}

// Options say what to check and how.
type Options struct {
	// Vendor is "xendit" or "snap:<bank>" (ParseVendor).
	Vendor string
	// Getenv reads the environment the api and the worker read.
	Getenv func(string) string
	// Vendors builds the payout vendors from the configuration exactly as
	// the api and the worker do (app.VendorRegistry).
	Vendors func(config.Config) (vendors.Registry, error)
	// Bank and Account are the account the inquiry asks about and the
	// test payout pays; empty: the rail's test account in test mode, and
	// no inquiry in live mode.
	Bank, Account string
	// Holder is the name a test payout carries when the inquiry tells
	// none; empty: DefaultHolder.
	Holder string
	// Amount of the test payout; zero: DefaultAmount.
	Amount models.Amount
	// Pay asks for the test payout explicitly (--pay): in live mode it is
	// then refused, a failure, rather than skipped. NoPay skips it.
	Pay, NoPay bool
	// Wait bounds how long the payout is followed to a final status
	// (default DefaultWait); Poll is the first pause between status
	// checks (default 500 ms, doubling up to 5 s).
	Wait, Poll time.Duration
	// HTTPClient makes the connect step's request; nil: a client as the
	// adapters use (proxy from the environment), with a 10 s timeout.
	HTTPClient *http.Client
}

// ParseVendor checks a --vendor value: "xendit" or "snap:<bank>" with a
// bank of the directory that has a BI code. It returns the value in its
// canonical (lowercase) form.
func ParseVendor(s string) (string, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == xendit.Name {
		return s, nil
	}
	if bank, ok := strings.CutPrefix(s, "snap:"); ok {
		if err := snap.CheckBank(bank); err != nil {
			return "", fmt.Errorf("--vendor %s: %w", s, err)
		}
		return s, nil
	}
	return "", fmt.Errorf("--vendor %q: want xendit or snap:<bank> (the sandbox vendors need no check)", s)
}

// Run checks o.Vendor and reports every step. It never fails: what goes
// wrong is in the report.
func Run(ctx context.Context, o Options) Report {
	if o.Amount == 0 {
		o.Amount = DefaultAmount
	}
	if o.Holder == "" {
		o.Holder = DefaultHolder
	}
	if o.Wait <= 0 {
		o.Wait = DefaultWait
	}
	if o.Poll <= 0 {
		o.Poll = 500 * time.Millisecond
	}
	if o.HTTPClient == nil {
		o.HTTPClient = vendors.NewHTTPClient()
		o.HTTPClient.Timeout = 10 * time.Second
	}
	r := &runner{o: o, report: Report{Vendor: o.Vendor, Steps: []Step{}}, secrets: secretsOf(o.Vendor, o.Getenv)}
	r.do(StepConfig, r.config)
	r.do(StepConnect, r.connect)
	r.do(StepAuth, func(s *Step) { r.rail.auth(ctx, r.vendor, s, r) })
	r.do(StepChannels, func(s *Step) { r.rail.channels(ctx, r.vendor, s, r) })
	r.do(StepInquiry, func(s *Step) { r.inquiry(ctx, s) })
	r.do(StepPayout, func(s *Step) { r.payout(ctx, s) })
	r.report.OK = r.failed == ""
	return r.report
}

// runner is one check under way.
type runner struct {
	o       Options
	report  Report
	secrets []string
	failed  string // the step that failed, "" so far

	rail   rail
	vendor vendors.Vendor
	test   bool   // the provider's test mode
	why    string // why test or live, as a sentence
	// bank, account and holder of the inquiry, once it ran.
	bank, account, holder string
	inquired              bool
}

// do runs one step, or skips it after a failure, and records it.
func (r *runner) do(name string, f func(*Step)) {
	s := Step{Step: name}
	if r.failed != "" {
		s.Status = StatusSkipped
		s.Detail = "not run: the " + r.failed + " step failed"
	} else {
		start := time.Now()
		f(&s)
		s.ElapsedMS = time.Since(start).Milliseconds()
		if s.Status == "" {
			s.Status = StatusOK
		}
		if s.Status == StatusFailed {
			r.failed = name
		}
	}
	s.OK = s.Status == StatusOK
	r.report.Steps = append(r.report.Steps, r.scrub(s))
}

// fail marks s failed with what went wrong and the fix.
func fail(s *Step, err, fix string) {
	s.Status, s.Error, s.Fix = StatusFailed, err, fix
}

// skip marks s skipped, with why.
func skip(s *Step, why string) {
	s.Status, s.Detail = StatusSkipped, why
}

// secretsOf are the values no report may show: the rail's secrets as the
// environment holds them (a bank whose settings failed to load is not in
// the configuration, its secret still is in the environment).
func secretsOf(vendor string, getenv func(string) string) []string {
	var names []string
	if vendor == xendit.Name {
		names = []string{"XENDIT_SECRET_KEY", "XENDIT_CALLBACK_TOKEN"}
	} else if bank, ok := strings.CutPrefix(vendor, "snap:"); ok {
		p := snap.EnvPrefix(bank)
		names = []string{p + "CLIENT_SECRET", p + "PRIVATE_KEY"}
	}
	var out []string
	for _, n := range names {
		if v := strings.TrimSpace(getenv(n)); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// scrub replaces every secret in s's text by [redacted]: the adapters put
// none in their errors, and this makes sure of it.
func (r *runner) scrub(s Step) Step {
	clean := func(v string) string {
		for _, secret := range r.secrets {
			v = strings.ReplaceAll(v, secret, "[redacted]")
		}
		return v
	}
	s.Detail, s.Warning, s.Error, s.Fix = clean(s.Detail), clean(s.Warning), clean(s.Error), clean(s.Fix)
	for k, v := range s.Data {
		switch v := v.(type) {
		case string:
			s.Data[k] = clean(v)
		case []string:
			c := slices.Clone(v)
			for i := range c {
				c[i] = clean(c[i])
			}
			s.Data[k] = c
		}
	}
	return s
}

// failErr fails s with err: a provider out of reach is named by host:port
// with the URL setting to check; anything else is err's text with fix.
func (r *runner) failErr(s *Step, what string, err error, fix string) {
	if why := unreachable(err); why != "" {
		hp := hostPort(r.rail.baseURL())
		fail(s, fmt.Sprintf("%s: could not reach %s: %s", what, hp, why), reachFix(r.rail.urlVar(), r.rail.baseURL(), hp, why))
		return
	}
	fail(s, fmt.Sprintf("%s: %v", what, err), fix)
}

// config loads the configuration as the api and the worker do and finds
// the rail in it.
func (r *runner) config(s *Step) {
	cfg, err := config.Load(r.o.Getenv, config.Defaults())
	rail := newRail(r.o.Vendor, cfg)
	mine, others := splitErrors(err, rail.variables())
	if len(others) > 0 {
		s.Warning = "the api and the worker would still refuse to start: " + strings.Join(others, "; ")
	}
	if len(mine) > 0 {
		s.Data = map[string]any{"errors": mine}
		fail(s, strings.Join(mine, "; "), "set the variables named above in the environment of the api, the worker and this command (README.md, Connecting a real rail)")
		return
	}
	if missing, fix := rail.missing(); missing != "" {
		fail(s, missing, fix)
		return
	}
	reg, err := r.o.Vendors(cfg)
	if err != nil {
		fail(s, "building the vendors as the api does: "+err.Error(), "see the error; the api and the worker would refuse to start the same way")
		return
	}
	v, err := reg.Get(r.o.Vendor)
	if err != nil {
		fail(s, err.Error(), "the configuration names the rail but no vendor was built for it: a defect, report it")
		return
	}
	r.rail, r.vendor = rail, v
	r.test, r.why = rail.testMode()
	r.report.Mode = "live"
	if r.test {
		r.report.Mode = "test"
	}
	s.Detail = rail.describe() + "; " + r.why
	s.Data = map[string]any{"app_env": string(cfg.Env), "mode": r.report.Mode}
}

// connect makes one unauthenticated GET of the base URL, through the
// transport the adapters use: any HTTP answer proves the host reachable
// (DNS, route, firewall, TLS). No credential is sent.
func (r *runner) connect(s *Step) {
	base, hp := r.rail.baseURL(), hostPort(r.rail.baseURL())
	s.Data = map[string]any{"host": hp}
	req, err := http.NewRequest(http.MethodGet, base, nil)
	if err != nil {
		fail(s, "the base URL does not make a request: "+err.Error(), "check "+r.rail.urlVar())
		return
	}
	resp, err := r.o.HTTPClient.Do(req)
	if err != nil {
		why := unreachable(err)
		if why == "" {
			why = errText(err)
		}
		fail(s, fmt.Sprintf("could not reach %s: %s", hp, why), reachFix(r.rail.urlVar(), base, hp, why))
		return
	}
	resp.Body.Close()
	s.Detail = fmt.Sprintf("%s answered an unauthenticated GET with HTTP %d (any answer proves it reachable)", hp, resp.StatusCode)
}

// target is the account the inquiry asks about, and where it comes from;
// account is "" when there is none to ask about.
func (r *runner) target() (bank, account, source string) {
	bank, account = r.o.Bank, r.o.Account
	defBank, defAccount, defSource := r.rail.testAccount()
	if bank == "" {
		bank = defBank
	}
	switch {
	case account != "":
		source = "--account"
	case r.test:
		account, source = defAccount, defSource
	}
	return strings.ToLower(strings.TrimSpace(bank)), strings.TrimSpace(account), source
}

// inquiry resolves the account's holder through the vendor, as a quote does.
func (r *runner) inquiry(ctx context.Context, s *Step) {
	bank, account, source := r.target()
	if account == "" {
		skip(s, "live mode and no --account: give --bank and --account of an account you may look up (the platform's own, say) to check the inquiry")
		return
	}
	s.Data = map[string]any{"bank": bank, "account": mask(account), "account_from": source}
	acc, err := r.vendor.Inquire(ctx, vendors.InquiryRequest{BankCode: bank, AccountNo: account, TransferType: models.BIFAST})
	switch {
	case errors.Is(err, models.ErrUnsupportedBank):
		fail(s, fmt.Sprintf("%s is not on %s's bank list", bank, r.o.Vendor), "pick one of the codes the channels step lists (--bank)")
		return
	case errors.Is(err, models.ErrAccountNotResolved), errors.Is(err, models.ErrAccountInactive):
		fix := "check --bank and --account"
		if source != "--account" {
			fix = "the provider's test mode should resolve its test account (" + source + "): check that " + r.rail.urlVar() + " is the provider's test environment, or give --bank and --account of one it resolves"
		}
		fail(s, fmt.Sprintf("%s %s: %v", bank, mask(account), err), fix)
		return
	case err != nil:
		r.failErr(s, "the inquiry failed", err, r.rail.inquiryFix())
		return
	}
	r.bank, r.account, r.holder, r.inquired = bank, account, acc.HolderName, true
	s.Data["holder_name"] = acc.HolderName
	if acc.HolderName == "" {
		s.Detail = fmt.Sprintf("%s %s resolved without a holder name", bank, mask(account))
		s.Warning = r.rail.noHolder()
		return
	}
	s.Detail = fmt.Sprintf("%s %s is held by %q", bank, mask(account), acc.HolderName)
}

// payout pays DefaultAmount (or --pay) to the inquiry's account in the
// provider's test mode and follows it with Status until it is final or
// Wait has passed, recording each status seen.
func (r *runner) payout(ctx context.Context, s *Step) {
	switch {
	case r.o.NoPay:
		skip(s, "not asked for (--no-pay)")
		return
	case !r.test && r.o.Pay:
		fail(s, "refused: "+r.why+"; rail check makes a test payout only in the provider's test mode, where no money moves",
			"run the payout step with test credentials (Xendit: an xnd_development_ key; SNAP: APP_ENV=staging, which reaches SNAP through a simulator only); in live mode the check ends with the inquiry")
		return
	case !r.test:
		skip(s, "live mode, no test payout (it would move real money): "+r.why)
		return
	case !r.inquired:
		skip(s, "no account to pay: the inquiry did not run")
		return
	}
	holder, holderFrom := r.holder, "inquiry"
	if holder == "" {
		holder, holderFrom = r.o.Holder, "--holder"
		if r.o.Holder == DefaultHolder {
			holderFrom = "default (the inquiry told none)"
		}
	}
	ref := "railcheck-" + randomHex(6)
	s.Data = map[string]any{"reference": ref, "amount": r.o.Amount.String(), "bank": r.bank, "account": mask(r.account),
		"holder_name": holder, "holder_name_from": holderFrom}
	p := vendors.Payout{Reference: ref, BankCode: r.bank, AccountNo: r.account, TransferType: models.BIFAST, Amount: r.o.Amount,
		HolderName: holder}
	res, err := r.vendor.Submit(ctx, p)
	var seen []string
	note := func(res vendors.PayoutResult) {
		st := string(res.Status)
		if res.FailureReason != "" {
			st += " (" + res.FailureReason + ")"
		}
		if len(seen) == 0 || seen[len(seen)-1] != st {
			seen = append(seen, st)
		}
		s.Data["statuses"] = slices.Clone(seen)
	}
	var last error
	switch {
	case err == nil:
		note(res)
	case errors.Is(err, vendors.ErrRejected):
		fail(s, fmt.Sprintf("the rail refused the test payout %s: %v", ref, err), r.rail.rejectedFix(err))
		return
	default:
		// The outcome is unknown: the payout may exist. Ask, as the worker does.
		last = err
	}
	deadline := time.Now().Add(r.o.Wait)
	pause := r.o.Poll
	for !res.Status.Final() && time.Now().Before(deadline) {
		t := time.NewTimer(min(pause, time.Until(deadline)))
		select {
		case <-ctx.Done():
			t.Stop()
			fail(s, fmt.Sprintf("interrupted while following %s: %v", ref, ctx.Err()), "look the payout up in the provider's dashboard by its reference")
			return
		case <-t.C:
		}
		pause = min(2*pause, 5*time.Second)
		got, err := r.vendor.Status(ctx, ref)
		if err != nil {
			last = err
			continue
		}
		res, last = got, nil
		note(res)
	}
	switch {
	case res.Status == vendors.PayoutSuccess:
		s.Detail = fmt.Sprintf("paid %s IDR to %s %s as %s: %s", r.o.Amount, r.bank, mask(r.account), ref, strings.Join(seen, " → "))
	case res.Status.Final():
		fail(s, fmt.Sprintf("the test payout %s ended %s: %s", ref, res.Status, strings.Join(seen, " → ")),
			"a test payout to the test account should succeed: the provider's dashboard shows why under reference "+ref)
	case last != nil && len(seen) == 0:
		r.failErr(s, fmt.Sprintf("no answer settles the test payout %s after %s", ref, r.o.Wait), last,
			"look it up in the provider's dashboard by reference "+ref+" before trying again")
	default:
		fail(s, fmt.Sprintf("the test payout %s is not final after %s: %s", ref, r.o.Wait, strings.Join(seen, " → ")),
			"the provider may be slow: look it up in its dashboard by reference "+ref+", or give it longer with --wait")
	}
}

// splitErrors splits the configuration's errors into those naming one of
// names (the rail's variables) and the others.
func splitErrors(err error, names []string) (mine, others []string) {
	for _, e := range flatten(err) {
		msg := e.Error()
		if slices.ContainsFunc(names, func(n string) bool { return strings.Contains(msg, n) }) {
			mine = append(mine, msg)
		} else {
			others = append(others, msg)
		}
	}
	return mine, others
}

// flatten lists the errors joined in err (errors.Join, nested).
func flatten(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, flatten(e)...)
		}
		return out
	}
	return []error{err}
}

// mask keeps an account number's last four digits.
func mask(account string) string {
	if len(account) <= 4 {
		return "****"
	}
	return strings.Repeat("*", len(account)-4) + account[len(account)-4:]
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
