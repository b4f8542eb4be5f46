package main

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/payoutd/payoutd/internal/logging"
	"github.com/payoutd/payoutd/internal/safeurl"
	"github.com/payoutd/payoutd/vendors/snap"
	"github.com/payoutd/payoutd/vendors/snap/snapsim"
)

// snapSimSettings are runSnapSim's configuration, read from the
// environment.
type snapSimSettings struct {
	bank, addr                         string
	partnerID, clientKey, clientSecret string
	sourceAccount                      string
	platformKey                        *rsa.PublicKey
	bankKey                            *rsa.PrivateKey
	bankKeyWritten                     string // the public key PEM written for a generated bank key
	callbackURL                        string
	completeAfter                      time.Duration
}

// runSnapSim serves snapsim (one SNAP BI bank, sandbox only) on
// VENDORSIM_ADDR until ctx ends, and POSTs its signed transfer result
// notifications every 200 ms. Configuration, for bank B: SNAP_<B>_PARTNER_ID,
// SNAP_<B>_CLIENT_KEY and SNAP_<B>_CLIENT_SECRET (required, the service's
// values); the platform's public key from SNAP_<B>_PLATFORM_PUBLIC_KEY_FILE,
// else derived from SNAP_<B>_PRIVATE_KEY_FILE; SNAP_<B>_SOURCE_ACCOUNT
// (optional: the only source account accepted); the bank's signing key
// from SNAPSIM_BANK_PRIVATE_KEY_FILE, else one made now whose public half
// is written to a file named on stdout; the callback URL (--callback-url,
// else VENDORSIM_CALLBACK_URL/snap:<b>); SANDBOX_COMPLETE_AFTER.
func runSnapSim(ctx context.Context, bank, callbackURL string, stdout, stderr io.Writer, getenv func(string) string) error {
	s, err := readSnapSimSettings(bank, callbackURL, getenv)
	if err != nil {
		return err
	}
	log := logging.New(stderr, slog.LevelInfo)
	sim := snapsim.New(snapsim.Options{PartnerPublicKey: s.platformKey, ClientKey: s.clientKey, ClientSecret: s.clientSecret,
		PartnerID: s.partnerID, SourceAccountNo: s.sourceAccount, CompleteAfter: s.completeAfter,
		BankPrivateKey: s.bankKey, CallbackURL: s.callbackURL, Logger: log})
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		return err
	}
	srv := simServer(sim, log)
	log.Info("vendorsim listening", slog.String("addr", ln.Addr().String()), slog.String("provider", "snap"), slog.String("bank", s.bank),
		slog.String("callback_url", safeurl.Display(s.callbackURL)), slog.Duration("complete_after", s.completeAfter))
	p := snap.EnvPrefix(s.bank)
	fmt.Fprintf(stdout, "vendorsim: SNAP BI bank %s on http://%s (set %sBASE_URL to it; sandbox only, no real money)\n", s.bank, ln.Addr(), p)
	if s.bankKeyWritten != "" {
		fmt.Fprintf(stdout, "vendorsim: generated a bank signing key; its public key is %s (set %sBANK_PUBLIC_KEY_FILE to it)\n", s.bankKeyWritten, p)
	}
	notify := func(ctx context.Context) error { return sim.Run(ctx, 200*time.Millisecond) }
	return serveSim(ctx, notify, srv, ln, log)
}

// readSnapSimSettings reads and checks runSnapSim's variables, stopping at
// the first problem.
func readSnapSimSettings(bank, callbackURL string, getenv func(string) string) (snapSimSettings, error) {
	s := snapSimSettings{bank: strings.ToLower(strings.TrimSpace(bank)), addr: strings.TrimSpace(getenv("VENDORSIM_ADDR")), completeAfter: 2 * time.Second}
	if s.addr == "" {
		s.addr = ":8090"
	}
	if s.bank == "" {
		return s, errors.New("--bank is required with --provider snap: the slug of the bank to simulate, such as bca")
	}
	if err := snap.CheckBank(s.bank); err != nil {
		return s, fmt.Errorf("--bank: %w", err)
	}
	p := snap.EnvPrefix(s.bank)
	get := func(name string) string { return strings.TrimSpace(getenv(p + name)) }
	for _, v := range []struct {
		name string
		dst  *string
	}{{"PARTNER_ID", &s.partnerID}, {"CLIENT_KEY", &s.clientKey}, {"CLIENT_SECRET", &s.clientSecret}} {
		if *v.dst = get(v.name); *v.dst == "" {
			return s, fmt.Errorf("%s%s is required with --provider snap --bank %s: the same value as the service's", p, v.name, s.bank)
		}
	}
	if s.clientKey == s.clientSecret {
		return s, fmt.Errorf("%sCLIENT_SECRET and %sCLIENT_KEY must differ", p, p)
	}
	s.sourceAccount = get("SOURCE_ACCOUNT")
	var err error
	if s.platformKey, err = snapSimPlatformKey(p, get); err != nil {
		return s, err
	}
	if s.bankKey, s.bankKeyWritten, err = snapSimBankKey(s.bank, getenv); err != nil {
		return s, err
	}
	if s.callbackURL, err = snapSimCallbackURL(s.bank, callbackURL, getenv); err != nil {
		return s, err
	}
	if s.completeAfter, err = simCompleteAfter(getenv, s.completeAfter); err != nil {
		return s, err
	}
	return s, nil
}

// snapSimPlatformKey is the key the access token requests are verified
// with: SNAP_<B>_PLATFORM_PUBLIC_KEY_FILE, or the public half of
// SNAP_<B>_PRIVATE_KEY_FILE (a simulator may read the service's key).
func snapSimPlatformKey(p string, get func(string) string) (*rsa.PublicKey, error) {
	if f := get("PLATFORM_PUBLIC_KEY_FILE"); f != "" {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("%sPLATFORM_PUBLIC_KEY_FILE=%q: cannot read it: %w", p, f, errors.Unwrap(err))
		}
		k, err := snap.ParseRSAPublicKey(b)
		if err != nil {
			return nil, fmt.Errorf("%sPLATFORM_PUBLIC_KEY_FILE=%q: %w", p, f, err)
		}
		return k, nil
	}
	f := get("PRIVATE_KEY_FILE")
	if f == "" {
		return nil, fmt.Errorf("%sPLATFORM_PUBLIC_KEY_FILE (or %sPRIVATE_KEY_FILE) is required with --provider snap: the key the access token requests are verified with", p, p)
	}
	b, err := os.ReadFile(f)
	if err != nil {
		return nil, fmt.Errorf("%sPRIVATE_KEY_FILE=%q: cannot read it: %w", p, f, errors.Unwrap(err))
	}
	k, err := snap.ParseRSAPrivateKey(b)
	if err != nil {
		return nil, fmt.Errorf("%sPRIVATE_KEY_FILE=%q: %w", p, f, err)
	}
	return &k.PublicKey, nil
}

// snapSimBankKey is the simulator's signing key: SNAPSIM_BANK_PRIVATE_KEY_FILE,
// or one made now, its public half written to a new file whose path is
// returned, for the service's SNAP_<B>_BANK_PUBLIC_KEY_FILE.
func snapSimBankKey(bank string, getenv func(string) string) (*rsa.PrivateKey, string, error) {
	if f := strings.TrimSpace(getenv("SNAPSIM_BANK_PRIVATE_KEY_FILE")); f != "" {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, "", fmt.Errorf("SNAPSIM_BANK_PRIVATE_KEY_FILE=%q: cannot read it: %w", f, errors.Unwrap(err))
		}
		k, err := snap.ParseRSAPrivateKey(b)
		if err != nil {
			return nil, "", fmt.Errorf("SNAPSIM_BANK_PRIVATE_KEY_FILE=%q: %w", f, err)
		}
		return k, "", nil
	}
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, "", err
	}
	der, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	if err != nil {
		return nil, "", err
	}
	f, err := os.CreateTemp("", "snapsim-"+bank+"-bank-public-*.pem")
	if err != nil {
		return nil, "", fmt.Errorf("writing the generated bank public key: %w", err)
	}
	defer f.Close()
	if err := pem.Encode(f, &pem.Block{Type: "PUBLIC KEY", Bytes: der}); err != nil {
		return nil, "", fmt.Errorf("writing the generated bank public key: %w", err)
	}
	return k, f.Name(), f.Close()
}

// snapSimCallbackURL: --callback-url, else VENDORSIM_CALLBACK_URL with
// /snap/<bank> appended (the service's path for the bank), else none.
func snapSimCallbackURL(bank, flagURL string, getenv func(string) string) (string, error) {
	u := strings.TrimSpace(flagURL)
	if u == "" {
		if base := strings.TrimSpace(getenv("VENDORSIM_CALLBACK_URL")); base != "" {
			u = strings.TrimRight(base, "/") + "/snap/" + bank
		}
	}
	if u == "" {
		return "", nil
	}
	parsed, err := url.Parse(u)
	if err != nil || (parsed.Scheme != "http" && parsed.Scheme != "https") || parsed.Host == "" {
		return "", fmt.Errorf("%s: want an http(s) URL such as http://127.0.0.1:8080%s", safeurl.Setting("the snap callback URL", u), snap.CallbackPath(bank))
	}
	return u, nil
}
