package railcheck

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/payoutd/payoutd/internal/config"
	"github.com/payoutd/payoutd/internal/safeurl"
	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors"
	"github.com/payoutd/payoutd/vendors/snap"
	"github.com/payoutd/payoutd/vendors/xendit"
)

// rail is what differs between the rails: their settings, how their
// credentials are proven, what their bank list is, their test accounts
// and the fixes their refusals call for.
type rail interface {
	// variables are the names whose configuration errors are the rail's.
	variables() []string
	// missing says, when the rail is not configured at all, what is
	// missing and the fix.
	missing() (string, string)
	describe() string
	urlVar() string
	baseURL() string
	// testMode says whether the provider moves no money with these
	// credentials, and why, as a sentence.
	testMode() (bool, string)
	auth(ctx context.Context, v vendors.Vendor, s *Step, r *runner)
	channels(ctx context.Context, v vendors.Vendor, s *Step, r *runner)
	// testAccount is the bank and account the provider's test mode
	// resolves and pays, and where that is documented.
	testAccount() (bank, account, source string)
	inquiryFix() string
	// noHolder is the warning when the inquiry tells no holder name.
	noHolder() string
	rejectedFix(err error) string
}

func newRail(vendor string, cfg config.Config) rail {
	if bank, ok := strings.CutPrefix(vendor, "snap:"); ok {
		r := snapRail{bank: bank, env: cfg.Env}
		for _, b := range cfg.SnapBanks {
			if b.Bank == bank {
				r.cfg, r.configured = b, true
			}
		}
		return r
	}
	return xenditRail{cfg: cfg}
}

// sandboxAccount is the account both simulators resolve (as "SANDBOX
// 7890") and pay: any number but the magic ones (docs/design.md, Sandbox
// vendors).
const sandboxAccount = "1234567890"

// xenditRail is Xendit Payouts v2 (XENDIT_*).
type xenditRail struct{ cfg config.Config }

func (xenditRail) variables() []string { return []string{"XENDIT_", "APP_ENV"} }

func (x xenditRail) missing() (string, string) {
	if x.cfg.Xendit.SecretKey != "" {
		return "", ""
	}
	return "XENDIT_SECRET_KEY is not set: there is no xendit vendor",
		"set XENDIT_SECRET_KEY (the secret API key) and XENDIT_CALLBACK_TOKEN (the webhook Verification Token) from Xendit's dashboard, Settings → Developers (README.md, Connecting a real rail, Xendit)"
}

func (x xenditRail) describe() string {
	return fmt.Sprintf("xendit: XENDIT_SECRET_KEY and XENDIT_CALLBACK_TOKEN set, %s, APP_ENV=%s",
		safeurl.Setting("XENDIT_BASE_URL", x.cfg.Xendit.BaseURL), x.cfg.Env)
}

func (xenditRail) urlVar() string    { return "XENDIT_BASE_URL" }
func (x xenditRail) baseURL() string { return x.cfg.Xendit.BaseURL }

// testMode: Xendit's key prefixes say the mode ("Create an API key",
// https://docs.xendit.co/docs/create-an-api-key-1; config refuses a key
// of the wrong mode for APP_ENV).
func (x xenditRail) testMode() (bool, string) {
	key := strings.ToLower(x.cfg.Xendit.SecretKey)
	switch {
	case strings.HasPrefix(key, "xnd_development_"):
		return true, "XENDIT_SECRET_KEY is a test-mode key (xnd_development_…): Xendit moves no money"
	case strings.HasPrefix(key, "xnd_production_"):
		return false, "XENDIT_SECRET_KEY is a live key (xnd_production_…): Xendit moves real money"
	}
	return false, "XENDIT_SECRET_KEY is not a test-mode key (xnd_development_…): it may move real money"
}

// auth: GET /payouts_channels with the secret key, the one read every
// Xendit wallet needs.
func (x xenditRail) auth(ctx context.Context, v vendors.Vendor, s *Step, r *runner) {
	banks, err := v.Banks(ctx)
	var apiErr *xendit.APIError
	switch {
	case err == nil:
		s.Detail = fmt.Sprintf("Xendit accepted XENDIT_SECRET_KEY: GET /payouts_channels answered (%d channels payoutd can use)", len(banks))
	case errors.As(err, &apiErr) && apiErr.HTTPStatus == http.StatusUnauthorized:
		fail(s, fmt.Sprintf("Xendit refused the secret key (HTTP 401 %s: %s)", apiErr.Code, apiErr.Message),
			"check XENDIT_SECRET_KEY: the secret key (not the public key) of this mode's API keys (xnd_development_… for test mode, xnd_production_… live) of the Indonesian Xendit account, copied whole and not deleted since (dashboard, Settings → Developers → API Keys: https://docs.xendit.co/docs/create-an-api-key-1)")
	case errors.As(err, &apiErr) && apiErr.HTTPStatus == http.StatusForbidden:
		fail(s, fmt.Sprintf("Xendit refused the secret key's permissions (HTTP 403 %s: %s)", apiErr.Code, apiErr.Message),
			"give XENDIT_SECRET_KEY Money-out Read and Write permission (dashboard, Settings → Developers → API Keys; \"an API Key with Money Out Read and Write permission\", https://docs.xendit.co/docs/test-scenarios-payouts), and if the key has an IP allow-list, add this machine's egress address")
	default:
		r.failErr(s, "GET /payouts_channels failed", err, "see the error; Xendit's status page and dashboard may say more")
	}
}

// channels: how many of payoutd's bank codes Xendit's channel list covers.
func (xenditRail) channels(ctx context.Context, v vendors.Vendor, s *Step, r *runner) {
	banks, err := v.Banks(ctx)
	if err != nil {
		r.failErr(s, "GET /payouts_channels failed", err, "see the error")
		return
	}
	have := map[string]bool{}
	var codes []string
	for _, b := range banks {
		have[b.Code] = true
		codes = append(codes, b.Code)
	}
	var ours int
	var missing []string
	for _, b := range vendors.Directory() {
		if _, ok := xendit.ChannelCode(b.Code); !ok {
			continue
		}
		ours++
		if !have[b.Code] {
			missing = append(missing, b.Code)
		}
	}
	s.Data = map[string]any{"covered": len(banks), "of": ours, "codes": codes}
	if len(banks) == 0 {
		fail(s, fmt.Sprintf("Xendit lists none of payoutd's %d banks and e-wallets among its IDR channels", ours),
			"the key must belong to the Indonesian Xendit account (\"One currency = One dashboard account = One API key\", https://docs.xendit.co/docs/test-scenarios-payouts), with IDR payouts activated")
		return
	}
	s.Detail = fmt.Sprintf("Xendit lists %d of the %d banks and e-wallets payoutd has channel codes for", len(banks), ours)
	if len(missing) > 0 {
		s.Data["missing"] = missing
		s.Warning = "not offered on xendit wallets (Xendit does not list them for this account): " + strings.Join(missing, ", ")
	}
}

// testAccount: "Successful Payout: ... any account_holder_name and
// account_number → SUCCEEDED" (Xendit's test scenarios); the simulator
// pays it too.
func (xenditRail) testAccount() (string, string, string) {
	return "bca", sandboxAccount, "Xendit's test mode pays any account number (https://docs.xendit.co/docs/test-scenarios-payouts), and so do payoutd's simulators (README.md, Sandbox account numbers)"
}

func (xenditRail) inquiryFix() string {
	return "the inquiry reads Xendit's channel list (GET /payouts_channels): see the error"
}

// noHolder: Payouts v2 has no account inquiry (see vendors/xendit).
func (xenditRail) noHolder() string {
	return "this rail needs a holder-name source: Xendit's Payouts v2 has no account inquiry (payoutd checks only that Xendit lists the bank and the number's shape); set XENDIT_INQUIRY_BANK to a connected SNAP bank whose inquiry resolves names, or merchants must send account_holder_name"
}

func (xenditRail) rejectedFix(err error) string {
	var apiErr *xendit.APIError
	if errors.As(err, &apiErr) && apiErr.Code == xendit.CodeInsufficientBalance {
		return "top up the Xendit balance of this mode (test mode: the dashboard's test balance)"
	}
	return "see Xendit's error: the test payout should be accepted in test mode"
}

// snapRail is one bank over SNAP BI (SNAP_BANKS, SNAP_<B>_*).
type snapRail struct {
	bank       string
	env        models.Environment
	cfg        snap.BankConfig
	configured bool
}

func (s snapRail) prefix() string { return snap.EnvPrefix(s.bank) }

func (s snapRail) variables() []string { return []string{"SNAP_BANKS", s.prefix(), "APP_ENV"} }

func (s snapRail) missing() (string, string) {
	if s.configured {
		return "", ""
	}
	return "SNAP_BANKS does not list " + s.bank + ": there is no snap:" + s.bank + " vendor",
		"add " + s.bank + " to SNAP_BANKS and set its " + s.prefix() + "* variables (README.md, Connecting a real rail, A SNAP bank)"
}

func (s snapRail) describe() string {
	return fmt.Sprintf("snap:%s: %s, %sPARTNER_ID %s, %sCLIENT_KEY %s, %sCHANNEL_ID %s, %sSOURCE_ACCOUNT %s, a %d-bit private key, the bank's public key, APP_ENV=%s",
		s.bank, safeurl.Setting(s.urlVar(), s.cfg.BaseURL), s.prefix(), s.cfg.PartnerID, s.prefix(), s.cfg.ClientKey,
		s.prefix(), s.cfg.ChannelID, s.prefix(), mask(s.cfg.SourceAccount), s.cfg.PrivateKey.N.BitLen(), s.env)
}

func (s snapRail) urlVar() string  { return s.prefix() + "BASE_URL" }
func (s snapRail) baseURL() string { return s.cfg.BaseURL }

// testMode: a bank's sandbox and its live API look alike, so APP_ENV
// decides; staging reaches SNAP banks through a simulator only (config).
func (s snapRail) testMode() (bool, string) {
	switch s.env {
	case models.Production:
		return false, "APP_ENV=production: " + s.urlVar() + " is the bank's live API, which moves real money"
	case models.Staging:
		return true, "APP_ENV=staging: " + s.urlVar() + " is a simulator or this machine (staging takes nothing else), which moves no money"
	}
	return true, "APP_ENV=" + string(s.env) + ": " + s.urlVar() + " is taken for a simulator or the bank's sandbox, which move no money"
}

// auth: an access token (the platform's RSA signature, the client key),
// then a signed status inquiry of a reference never used (the client
// secret, the partner id), which a bank that accepts both answers "not
// found". Nothing is created.
func (s snapRail) auth(ctx context.Context, v vendors.Vendor, step *Step, r *runner) {
	ref := "railcheck-auth-" + randomHex(6)
	_, err := v.Status(ctx, ref)
	var ce *snap.CodeError
	switch {
	case err == nil || errors.Is(err, vendors.ErrUnknownPayout):
		step.Detail = "the bank issued an access token (signed with " + s.prefix() + "PRIVATE_KEY, for " + s.prefix() +
			"CLIENT_KEY) and answered a signed status inquiry (" + s.prefix() + "CLIENT_SECRET) of an unused reference with \"not found\", as expected"
	case errors.As(err, &ce):
		s.codeRefused(step, ce)
	default:
		r.failErr(step, "the access token or the signed status inquiry failed", err, "see the error")
	}
}

// codeRefused reports a refusal by the bank's responseCode: which call
// (service 73 is the access token) and what the message names.
func (s snapRail) codeRefused(step *Step, ce *snap.CodeError) {
	p, c := s.prefix(), ce.Code
	msg := strings.ToLower(c.Message)
	token := c.Service == snap.ServiceAccessToken
	answer := fmt.Sprintf("SNAP %s %q", c, c.Message)
	keyFix := p + "PRIVATE_KEY_FILE (or " + p + "PRIVATE_KEY) is not the private half of the public key registered at the bank: compare `openssl pkey -in <private key> -pubout` with the public key uploaded to the bank's portal, and register the right one (a newly registered key may take the bank a while to activate)"
	clientKeyFix := p + "CLIENT_KEY is not a client key the bank knows: copy X-CLIENT-KEY again from the bank's onboarding (sandbox and production keys differ)"
	secretFix := p + "CLIENT_SECRET is not the client secret the bank issued with " + p + "CLIENT_KEY (the service calls' X-SIGNATURE is an HMAC-SHA512 under it): copy it again from the bank's onboarding"
	partnerFix := p + "PARTNER_ID is not the partner id (X-PARTNER-ID) the bank issued: copy it again from the bank's onboarding"
	switch {
	case c.HTTP == http.StatusBadRequest && strings.Contains(msg, "timestamp"):
		fail(step, "the bank refused the request's X-TIMESTAMP ("+answer+")",
			"this machine's clock is off: banks take X-TIMESTAMP only within minutes of their own clock; synchronise it (NTP)")
	case token && c.HTTP == http.StatusUnauthorized && strings.Contains(msg, "signature"):
		fail(step, "the bank could not verify the access-token request's signature ("+answer+")", keyFix)
	case token && c.HTTP == http.StatusUnauthorized && strings.Contains(msg, "client"):
		fail(step, "the bank does not know the client key ("+answer+")", clientKeyFix)
	case token && c.HTTP == http.StatusUnauthorized:
		fail(step, "the bank refused the access-token request ("+answer+")", clientKeyFix+"; or "+keyFix)
	case token:
		fail(step, "the bank refused the access-token request ("+answer+")", "check "+p+"CLIENT_KEY and the key pair with the bank")
	case c.HTTP == http.StatusUnauthorized && strings.Contains(msg, "signature"):
		fail(step, "the bank issued an access token but refused the signature of a service call ("+answer+")", secretFix)
	case c.HTTP == http.StatusUnauthorized && (strings.Contains(msg, "client") || strings.Contains(msg, "partner")):
		fail(step, "the bank issued an access token but does not know the partner ("+answer+")", partnerFix)
	case c.HTTP == http.StatusUnauthorized:
		fail(step, "the bank issued an access token but refused a service call with it ("+answer+")", secretFix+"; or "+partnerFix)
	case c.HTTP >= 500 || c.HTTP == http.StatusTooManyRequests:
		fail(step, "the bank is failing ("+answer+")", "try again later; if it lasts, ask the bank")
	default:
		// Authenticated, then refused for something else: the
		// credentials are good, the answer deserves a look.
		step.Detail = "the bank issued an access token and took a signed status inquiry"
		step.Warning = "a status inquiry of an unused reference was answered " + answer + ", not \"not found\" (404xx01): the credentials are accepted, but the bank's answers may differ from what payoutd expects"
	}
}

// channels: SNAP has no bank-list service; interbank transfer reaches the
// directory's banks with a BI code.
func (s snapRail) channels(ctx context.Context, v vendors.Vendor, step *Step, r *runner) {
	banks, err := v.Banks(ctx)
	if err != nil {
		r.failErr(step, "the bank list", err, "see the error")
		return
	}
	var codes []string
	for _, b := range banks {
		codes = append(codes, b.Code)
	}
	step.Data = map[string]any{"covered": len(banks), "codes": codes}
	step.Detail = fmt.Sprintf("SNAP has no bank-list service: snap:%s pays by interbank transfer to the %d banks of payoutd's directory with a BI code (no e-wallets); which the bank reaches by BI-FAST is the bank's to say", s.bank, len(banks))
}

// testAccount: another bank than the rail's, so that the transfer is
// interbank, and the account both simulators resolve and pay.
func (s snapRail) testAccount() (string, string, string) {
	bank := "bri"
	if s.bank == "bri" {
		bank = "bca"
	}
	return bank, sandboxAccount, "payoutd's SNAP simulator resolves it as \"SANDBOX 7890\" and pays it (README.md, Sandbox account numbers); a bank's own sandbox documents its test accounts: pass one with --bank and --account"
}

func (s snapRail) inquiryFix() string {
	return "the bank's external account inquiry failed: see the error"
}

func (snapRail) noHolder() string { return "the bank told no holder name" }

func (s snapRail) rejectedFix(err error) string {
	if errors.Is(err, snap.ErrSourceInsufficientFunds) {
		return "top up the source account " + s.prefix() + "SOURCE_ACCOUNT at the bank"
	}
	return "see the bank's answer: the test payout should be accepted in the bank's test environment"
}
