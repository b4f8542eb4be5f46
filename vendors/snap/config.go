package snap

import (
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/payoutd/payoutd/internal/safeurl"
	"github.com/payoutd/payoutd/internal/vendorurl"
	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors"
)

// BankConfig is the configuration of one bank reached over SNAP BI
// (SNAP_BANKS and its SNAP_<B>_* variables, see docs/configuration.md):
// the vendor "snap:<Bank>". Its String shows no secret, so printing a
// configuration never leaks one.
type BankConfig struct {
	Bank          string // slug of vendors/banks.tsv with a BI code ("bca")
	BaseURL       string // SNAP_<B>_BASE_URL
	PartnerID     string // SNAP_<B>_PARTNER_ID: X-PARTNER-ID
	ClientKey     string // SNAP_<B>_CLIENT_KEY: X-CLIENT-KEY
	ClientSecret  string // SNAP_<B>_CLIENT_SECRET: the HMAC-SHA512 key
	ChannelID     string // SNAP_<B>_CHANNEL_ID: CHANNEL-ID
	SourceAccount string // SNAP_<B>_SOURCE_ACCOUNT: the account transfers debit
	// PrivateKey signs the B2B token request (SNAP_<B>_PRIVATE_KEY_FILE or
	// SNAP_<B>_PRIVATE_KEY); its public half is registered with the bank.
	PrivateKey *rsa.PrivateKey
	// BankPublicKey verifies the bank's transfer notifications
	// (SNAP_<B>_BANK_PUBLIC_KEY_FILE or SNAP_<B>_BANK_PUBLIC_KEY);
	// required with Notifications.
	BankPublicKey *rsa.PublicKey
	// Notifications says the bank sends transfer result notifications
	// (SNAP_<B>_NOTIFICATIONS, on by default when BankPublicKey is set);
	// without them its results and returns are learnt by status inquiry.
	Notifications bool
}

// Vendor is the vendor name of the bank: "snap:<bank>".
func (b BankConfig) Vendor() string { return "snap:" + b.Bank }

// String shows the bank, its URL as safeurl shows it, and ids, never the
// client secret or the keys, and the last four digits of the source
// account. It prints as SnapBank{…}, the form logs and
// support threads already know.
func (b BankConfig) String() string {
	return fmt.Sprintf("SnapBank{Bank:%s BaseURL:%s PartnerID:%s ClientKey:%s ChannelID:%s SourceAccount:%s Notifications:%t ClientSecret:[redacted] PrivateKey:[redacted]}",
		b.Bank, safeurl.Display(b.BaseURL), b.PartnerID, b.ClientKey, b.ChannelID, lastFour(b.SourceAccount), b.Notifications)
}

// GoString is String, for %#v.
func (b BankConfig) GoString() string { return b.String() }

func lastFour(s string) string {
	if len(s) <= 4 {
		return "****"
	}
	return strings.Repeat("*", len(s)-4) + s[len(s)-4:]
}

// EnvPrefix is the prefix of a bank's variables: SNAP_BCA_ for "bca".
func EnvPrefix(bank string) string { return "SNAP_" + strings.ToUpper(bank) + "_" }

// LoadConfig reads SNAP_BANKS through getenv and, for each bank it names,
// that bank's variables, under env's (APP_ENV's) rules for the base URL;
// a bank with any problem is left out. Every problem is reported with the
// variable's name, and no message shows a secret.
func LoadConfig(getenv func(string) string, env models.Environment) ([]BankConfig, error) {
	l := &loader{getenv: getenv}
	banks := l.banks(env)
	return banks, errors.Join(l.errs...)
}

// loader reads variables through getenv and collects every problem it
// finds.
type loader struct {
	getenv func(string) string
	errs   []error
}

func (l *loader) get(name string) string { return strings.TrimSpace(l.getenv(name)) }

func (l *loader) fail(err error) { l.errs = append(l.errs, err) }

// banks reads SNAP_BANKS and the variables of each bank it names.
func (l *loader) banks(env models.Environment) []BankConfig {
	list := l.get("SNAP_BANKS")
	if list == "" {
		return nil
	}
	var banks []BankConfig
	seen := map[string]bool{}
	for _, part := range strings.Split(list, ",") {
		slug := strings.ToLower(strings.TrimSpace(part))
		if slug == "" {
			continue
		}
		if seen[slug] {
			l.fail(fmt.Errorf("SNAP_BANKS=%q: %s is listed twice", list, slug))
			continue
		}
		seen[slug] = true
		if err := CheckBank(slug); err != nil {
			l.fail(fmt.Errorf("SNAP_BANKS=%q: %w", list, err))
			continue
		}
		if b, ok := l.bank(env, slug); ok {
			banks = append(banks, b)
		}
	}
	return banks
}

// CheckBank accepts a bank of vendors/banks.tsv that has a BI code
// (SNAP's beneficiaryBankCode); e-wallets and unknown names are refused.
func CheckBank(slug string) error {
	if BICode(slug) != "" {
		return nil
	}
	for _, b := range vendors.Directory() {
		if b.Code == slug {
			return fmt.Errorf("%s has no BI bank code in vendors/banks.tsv: SNAP interbank transfer cannot reach it", slug)
		}
	}
	return fmt.Errorf("unknown bank %q: want slugs of vendors/banks.tsv with a BI code, such as bca,bri", slug)
}

// bank reads one bank's variables; ok is false when any is wrong.
func (l *loader) bank(env models.Environment, slug string) (BankConfig, bool) {
	p := EnvPrefix(slug)
	b := BankConfig{Bank: slug}
	before := len(l.errs)
	required := []struct {
		name string
		dst  *string
		what string
	}{
		{"BASE_URL", &b.BaseURL, "the bank's SNAP base URL (https)"},
		{"PARTNER_ID", &b.PartnerID, "X-PARTNER-ID, from the bank"},
		{"CLIENT_KEY", &b.ClientKey, "X-CLIENT-KEY, from the bank"},
		{"CLIENT_SECRET", &b.ClientSecret, "the client secret of service signatures, from the bank"},
		{"CHANNEL_ID", &b.ChannelID, "CHANNEL-ID, from the bank"},
		{"SOURCE_ACCOUNT", &b.SourceAccount, "the platform's account at the bank that transfers debit"},
	}
	for _, r := range required {
		if *r.dst = l.get(p + r.name); *r.dst == "" {
			l.fail(fmt.Errorf("%s%s is required with SNAP_BANKS=...%s...: %s", p, r.name, slug, r.what))
		}
	}
	if b.BaseURL != "" {
		if err := checkBaseURL(env, p+"BASE_URL", b.BaseURL); err != nil {
			l.fail(err)
		}
	}
	if b.ClientSecret != "" && b.ClientSecret == b.ClientKey {
		l.fail(fmt.Errorf("%sCLIENT_SECRET and %sCLIENT_KEY must differ: the key travels in every request header, the secret must not", p, p))
	}
	if raw, name, ok := l.pem(p+"PRIVATE_KEY", "the platform's RSA private key (PEM) that signs the access token request", true); ok {
		if key, err := ParseRSAPrivateKey(raw); err != nil {
			l.fail(fmt.Errorf("%s: %w", name, err))
		} else {
			b.PrivateKey = key
		}
	}
	keyNamed := l.get(p+"BANK_PUBLIC_KEY_FILE") != "" || l.get(p+"BANK_PUBLIC_KEY") != ""
	if raw, name, ok := l.pem(p+"BANK_PUBLIC_KEY", "the bank's RSA public key (PEM) that verifies its transfer notifications", false); ok {
		if key, err := ParseRSAPublicKey(raw); err != nil {
			l.fail(fmt.Errorf("%s: %w", name, err))
		} else {
			b.BankPublicKey = key
		}
	}
	switch v := l.get(p + "NOTIFICATIONS"); strings.ToLower(v) {
	case "":
		b.Notifications = keyNamed
	case "on":
		b.Notifications = true
		if !keyNamed {
			l.fail(fmt.Errorf("%sNOTIFICATIONS=on needs the bank's public key, which verifies the notifications: set %sBANK_PUBLIC_KEY_FILE (or %sBANK_PUBLIC_KEY), or %sNOTIFICATIONS=off to learn results and returns by status inquiry",
				p, p, p, p))
		}
	case "off":
	default:
		l.fail(fmt.Errorf("%sNOTIFICATIONS=%q: want on (the bank sends transfer result notifications) or off (results and returns by status inquiry)", p, v))
	}
	return b, len(l.errs) == before
}

// pem reads a PEM from NAME_FILE (a path) or NAME (inline, with real
// newlines or "\n"); at most one of them, and one when required. It
// returns the PEM and the name of the variable it came from; ok is false
// when there is none. Nothing read is ever put in an error.
func (l *loader) pem(name, what string, required bool) ([]byte, string, bool) {
	file, inline := l.get(name+"_FILE"), l.get(name)
	switch {
	case file != "" && inline != "":
		l.fail(fmt.Errorf("%s_FILE and %s are both set: set one (%s)", name, name, what))
		return nil, "", false
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			l.fail(fmt.Errorf("%s_FILE=%q: cannot read it: %w", name, file, errors.Unwrap(err)))
			return nil, "", false
		}
		return b, name + "_FILE=" + fmt.Sprintf("%q", file), true
	case inline != "":
		if !strings.Contains(inline, "\n") {
			inline = strings.ReplaceAll(inline, `\n`, "\n")
		}
		return []byte(inline), name, true
	}
	if required {
		l.fail(fmt.Errorf("%s_FILE (or %s) is required: %s", name, name, what))
	}
	return nil, "", false
}

// ParseRSAPrivateKey reads an RSA private key PEM, PKCS #8 ("PRIVATE
// KEY") or PKCS #1 ("RSA PRIVATE KEY"), of at least 2048 bits.
func ParseRSAPrivateKey(b []byte) (*rsa.PrivateKey, error) {
	blk, _ := pem.Decode(b)
	if blk == nil {
		return nil, errors.New("not a PEM private key (want -----BEGIN PRIVATE KEY----- or -----BEGIN RSA PRIVATE KEY-----)")
	}
	var key any
	var err error
	switch blk.Type {
	case "PRIVATE KEY":
		key, err = x509.ParsePKCS8PrivateKey(blk.Bytes)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(blk.Bytes)
	default:
		return nil, fmt.Errorf("PEM block %q is not a private key (want PRIVATE KEY or RSA PRIVATE KEY)", blk.Type)
	}
	if err != nil {
		return nil, errors.New("the private key PEM does not parse (PKCS #8 or PKCS #1 wanted)")
	}
	rk, ok := key.(*rsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("the private key is %T, not RSA: SNAP signs with SHA256withRSA", key)
	}
	return rk, checkRSASize(rk.N.BitLen())
}

// ParseRSAPublicKey reads an RSA public key PEM: PKIX ("PUBLIC KEY") or
// PKCS #1 ("RSA PUBLIC KEY").
func ParseRSAPublicKey(b []byte) (*rsa.PublicKey, error) {
	blk, _ := pem.Decode(b)
	if blk == nil {
		return nil, errors.New("not a PEM public key (want -----BEGIN PUBLIC KEY-----)")
	}
	var key any
	var err error
	switch blk.Type {
	case "PUBLIC KEY":
		key, err = x509.ParsePKIXPublicKey(blk.Bytes)
	case "RSA PUBLIC KEY":
		key, err = x509.ParsePKCS1PublicKey(blk.Bytes)
	default:
		return nil, fmt.Errorf("PEM block %q is not a public key (want PUBLIC KEY)", blk.Type)
	}
	if err != nil {
		return nil, errors.New("the public key PEM does not parse")
	}
	rk, ok := key.(*rsa.PublicKey)
	if !ok {
		return nil, fmt.Errorf("the public key is %T, not RSA: SNAP signs with SHA256withRSA", key)
	}
	return rk, checkRSASize(rk.N.BitLen())
}

// checkRSASize refuses keys under 2048 bits, which no bank accepts today.
func checkRSASize(bits int) error {
	if bits < 2048 {
		return fmt.Errorf("the RSA key has %d bits: at least 2048", bits)
	}
	return nil
}

// checkBaseURL applies the environment's rules to a SNAP bank's base URL
// (vendorurl's for a rail). Staging cannot tell a bank's sandbox from its
// live API, so it takes a simulator or loopback only: anything else may
// move real money.
func checkBaseURL(env models.Environment, name, raw string) error {
	u, err := (vendorurl.Setting{Name: name, Raw: raw, Example: "https://api.bank.example", Carries: "the bank's tokens and signatures"}).CheckRail(env)
	if err != nil {
		return err
	}
	if env == models.Staging && !vendorurl.IsLoopback(u.Hostname()) && !vendorurl.IsSimulatorHost(u.Hostname()) {
		return fmt.Errorf("%s: APP_ENV=staging reaches SNAP banks through a simulator only (a loopback address, or a service named snapsim or vendorsim: `payoutd vendorsim --provider snap`), since any other URL may be the bank's live API and move real money; run with APP_ENV=production to reach the bank",
			safeurl.Setting(name, raw))
	}
	return nil
}
