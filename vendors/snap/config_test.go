package snap

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/payoutd/payoutd/models"
)

var (
	testKeyOnce sync.Once
	testKey     *rsa.PrivateKey
)

// snapKeys writes a throwaway RSA key pair (PKCS #8 private, PKIX public)
// and, for the refusals, a PKCS #1 private key, an EC key and a file that
// is no PEM; it returns their paths.
func snapKeys(t *testing.T) map[string]string {
	t.Helper()
	testKeyOnce.Do(func() {
		var err error
		if testKey, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
			panic(err)
		}
	})
	dir := t.TempDir()
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	pkcs8, _ := x509.MarshalPKCS8PrivateKey(testKey)
	pub, _ := x509.MarshalPKIXPublicKey(&testKey.PublicKey)
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ecDER, _ := x509.MarshalPKCS8PrivateKey(ec)
	ecPub, _ := x509.MarshalPKIXPublicKey(&ec.PublicKey)
	junk := filepath.Join(dir, "junk.pem")
	if err := os.WriteFile(junk, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	return map[string]string{
		"private": write("private.pem", "PRIVATE KEY", pkcs8),
		"pkcs1":   write("pkcs1.pem", "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(testKey)),
		"public":  write("public.pem", "PUBLIC KEY", pub),
		"ec":      write("ec.pem", "PRIVATE KEY", ecDER),
		"ecpub":   write("ecpub.pem", "PUBLIC KEY", ecPub),
		"junk":    junk,
		"missing": filepath.Join(dir, "missing.pem"),
	}
}

// snapEnv is a complete configuration of one bank, bca.
func snapEnv(keys map[string]string) map[string]string {
	return map[string]string{
		"SNAP_BANKS":                    "bca",
		"SNAP_BCA_BASE_URL":             "https://sandbox.bank.example",
		"SNAP_BCA_PARTNER_ID":           "PARTNER1",
		"SNAP_BCA_CLIENT_KEY":           "CLIENT-KEY-1",
		"SNAP_BCA_CLIENT_SECRET":        "CLIENT-SECRET-XYZ",
		"SNAP_BCA_CHANNEL_ID":           "95221",
		"SNAP_BCA_SOURCE_ACCOUNT":       "8880001111",
		"SNAP_BCA_PRIVATE_KEY_FILE":     keys["private"],
		"SNAP_BCA_BANK_PUBLIC_KEY_FILE": keys["public"],
	}
}

// load is LoadConfig on env, under its APP_ENV (production when unset,
// as the service's default).
func load(env map[string]string) ([]BankConfig, error) {
	appEnv := models.Production
	if v := env["APP_ENV"]; v != "" {
		var err error
		if appEnv, err = models.ParseEnvironment(v); err != nil {
			return nil, err
		}
	}
	return LoadConfig(func(k string) string { return env[k] }, appEnv)
}

// Each SNAP misconfiguration stops the start with a message naming the
// variable; a complete one yields the bank with its keys.
func TestSnapSettings(t *testing.T) {
	keys := snapKeys(t)
	inlinePEM, _ := os.ReadFile(keys["private"])
	for _, tt := range []struct {
		name    string
		change  map[string]string // "" deletes
		wantErr string            // "" for none
	}{
		{name: "complete"},
		{name: "no SNAP_BANKS, nothing read", change: map[string]string{"SNAP_BANKS": "", "SNAP_BCA_BASE_URL": "ftp://x"}},
		{name: "PKCS #1 private key", change: map[string]string{"SNAP_BCA_PRIVATE_KEY_FILE": keys["pkcs1"]}},
		{name: "inline PEM with \\n", change: map[string]string{"SNAP_BCA_PRIVATE_KEY_FILE": "", "SNAP_BCA_PRIVATE_KEY": strings.ReplaceAll(string(inlinePEM), "\n", `\n`)}},
		{name: "loopback http", change: map[string]string{"SNAP_BCA_BASE_URL": "http://127.0.0.1:8091"}},
		{name: "simulator host in staging", change: map[string]string{"APP_ENV": "staging", "SNAP_BCA_BASE_URL": "http://snapsim-bca:8091"}},
		{name: "unknown slug", change: map[string]string{"SNAP_BANKS": "bca,bankofnowhere"}, wantErr: `unknown bank "bankofnowhere"`},
		{name: "slug without BI code", change: map[string]string{"SNAP_BANKS": "dana"}, wantErr: "dana has no BI bank code"},
		{name: "twice", change: map[string]string{"SNAP_BANKS": "bca,BCA"}, wantErr: "bca is listed twice"},
		{name: "missing base URL", change: map[string]string{"SNAP_BCA_BASE_URL": ""}, wantErr: "SNAP_BCA_BASE_URL is required"},
		{name: "missing partner", change: map[string]string{"SNAP_BCA_PARTNER_ID": ""}, wantErr: "SNAP_BCA_PARTNER_ID is required"},
		{name: "missing client key", change: map[string]string{"SNAP_BCA_CLIENT_KEY": ""}, wantErr: "SNAP_BCA_CLIENT_KEY is required"},
		{name: "missing secret", change: map[string]string{"SNAP_BCA_CLIENT_SECRET": ""}, wantErr: "SNAP_BCA_CLIENT_SECRET is required"},
		{name: "missing channel", change: map[string]string{"SNAP_BCA_CHANNEL_ID": ""}, wantErr: "SNAP_BCA_CHANNEL_ID is required"},
		{name: "missing source", change: map[string]string{"SNAP_BCA_SOURCE_ACCOUNT": ""}, wantErr: "SNAP_BCA_SOURCE_ACCOUNT is required"},
		{name: "missing private key", change: map[string]string{"SNAP_BCA_PRIVATE_KEY_FILE": ""}, wantErr: "SNAP_BCA_PRIVATE_KEY_FILE (or SNAP_BCA_PRIVATE_KEY) is required"},
		{name: "both key forms", change: map[string]string{"SNAP_BCA_PRIVATE_KEY": string(inlinePEM)}, wantErr: "SNAP_BCA_PRIVATE_KEY_FILE and SNAP_BCA_PRIVATE_KEY are both set"},
		{name: "unreadable key", change: map[string]string{"SNAP_BCA_PRIVATE_KEY_FILE": keys["missing"]}, wantErr: "SNAP_BCA_PRIVATE_KEY_FILE=" + fmt.Sprintf("%q", keys["missing"]) + ": cannot read it"},
		{name: "not PEM", change: map[string]string{"SNAP_BCA_PRIVATE_KEY_FILE": keys["junk"]}, wantErr: "SNAP_BCA_PRIVATE_KEY_FILE=" + fmt.Sprintf("%q", keys["junk"]) + ": not a PEM private key"},
		{name: "EC private key", change: map[string]string{"SNAP_BCA_PRIVATE_KEY_FILE": keys["ec"]}, wantErr: "not RSA"},
		{name: "public key as private", change: map[string]string{"SNAP_BCA_PRIVATE_KEY_FILE": keys["public"]}, wantErr: `PEM block "PUBLIC KEY" is not a private key`},
		{name: "EC bank key", change: map[string]string{"SNAP_BCA_BANK_PUBLIC_KEY_FILE": keys["ecpub"]}, wantErr: "SNAP_BCA_BANK_PUBLIC_KEY_FILE"},
		{name: "private as bank key", change: map[string]string{"SNAP_BCA_BANK_PUBLIC_KEY_FILE": keys["private"]}, wantErr: "is not a public key"},
		{name: "plain http", change: map[string]string{"SNAP_BCA_BASE_URL": "http://api.bank.example"}, wantErr: `SNAP_BCA_BASE_URL=http://api.bank.example: APP_ENV=production sends the bank's tokens and signatures over https only`},
		{name: "relative URL", change: map[string]string{"SNAP_BCA_BASE_URL": "bank.example"}, wantErr: "SNAP_BCA_BASE_URL"},
		{name: "secret equals key", change: map[string]string{"SNAP_BCA_CLIENT_SECRET": "CLIENT-KEY-1"}, wantErr: "SNAP_BCA_CLIENT_SECRET and SNAP_BCA_CLIENT_KEY must differ"},
	} {
		env := snapEnv(keys)
		for k, v := range tt.change {
			if v == "" {
				delete(env, k)
			} else {
				env[k] = v
			}
		}
		banks, err := load(env)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s: error %v, want one containing %q", tt.name, err, tt.wantErr)
			}
			if err != nil && strings.Contains(err.Error(), "CLIENT-SECRET-XYZ") {
				t.Errorf("%s: the error shows the client secret: %v", tt.name, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if env["SNAP_BANKS"] == "" {
			if len(banks) != 0 {
				t.Errorf("%s: banks %v", tt.name, banks)
			}
			continue
		}
		if len(banks) != 1 {
			t.Fatalf("%s: banks %v", tt.name, banks)
		}
		b := banks[0]
		if b.Vendor() != "snap:bca" || b.PrivateKey == nil || b.BankPublicKey == nil || b.ClientSecret != "CLIENT-SECRET-XYZ" || b.SourceAccount != "8880001111" {
			t.Errorf("%s: bank %v", tt.name, b)
		}
	}
}

// SNAP_<B>_NOTIFICATIONS: on by default with the bank's public key, off
// without it (the bank need not send notifications, and then needs no
// key); on without the key refuses the start, saying what to set.
func TestSnapNotifications(t *testing.T) {
	keys := snapKeys(t)
	const noKey = "SNAP_BCA_NOTIFICATIONS=on needs the bank's public key, which verifies the notifications: set SNAP_BCA_BANK_PUBLIC_KEY_FILE (or SNAP_BCA_BANK_PUBLIC_KEY), or SNAP_BCA_NOTIFICATIONS=off to learn results and returns by status inquiry"
	for _, tt := range []struct {
		name    string
		change  map[string]string // "" deletes
		want    bool
		wantErr string
	}{
		{name: "default with the key", want: true},
		{name: "default without the key", change: map[string]string{"SNAP_BCA_BANK_PUBLIC_KEY_FILE": ""}},
		{name: "off without the key", change: map[string]string{"SNAP_BCA_BANK_PUBLIC_KEY_FILE": "", "SNAP_BCA_NOTIFICATIONS": "off"}},
		{name: "off with the key", change: map[string]string{"SNAP_BCA_NOTIFICATIONS": "OFF"}},
		{name: "on with the key", change: map[string]string{"SNAP_BCA_NOTIFICATIONS": "on"}, want: true},
		{name: "on with the key inline", change: map[string]string{"SNAP_BCA_BANK_PUBLIC_KEY_FILE": "", "SNAP_BCA_BANK_PUBLIC_KEY": mustRead(t, keys["public"]), "SNAP_BCA_NOTIFICATIONS": "on"}, want: true},
		{name: "on without the key", change: map[string]string{"SNAP_BCA_BANK_PUBLIC_KEY_FILE": "", "SNAP_BCA_NOTIFICATIONS": "on"}, wantErr: noKey},
		{name: "neither on nor off", change: map[string]string{"SNAP_BCA_NOTIFICATIONS": "yes"}, wantErr: `SNAP_BCA_NOTIFICATIONS="yes": want on`},
	} {
		env := snapEnv(keys)
		for k, v := range tt.change {
			if v == "" {
				delete(env, k)
			} else {
				env[k] = v
			}
		}
		banks, err := load(env)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s: error %v, want one containing %q", tt.name, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if b := banks[0]; b.Notifications != tt.want || (b.BankPublicKey != nil) != (env["SNAP_BCA_BANK_PUBLIC_KEY_FILE"] != "" || env["SNAP_BCA_BANK_PUBLIC_KEY"] != "") {
			t.Errorf("%s: notifications %v (key %v), want %v", tt.name, b.Notifications, b.BankPublicKey != nil, tt.want)
		}
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Printing the configuration shows no SNAP secret and no full source
// account, the banks alone or within a configuration that holds them.
func TestSnapSecretsNeverPrinted(t *testing.T) {
	keys := snapKeys(t)
	env := snapEnv(keys)
	banks, err := load(env)
	if err != nil {
		t.Fatal(err)
	}
	c := struct {
		Env       models.Environment
		SnapBanks []BankConfig
	}{models.Production, banks}
	d := fmt.Sprint(testKey.D)[:12]
	for _, s := range []string{fmt.Sprintf("%v", c), fmt.Sprintf("%+v", c), fmt.Sprintf("%#v", banks), fmt.Sprint(banks[0])} {
		for _, secret := range []string{"CLIENT-SECRET-XYZ", "8880001111", d} {
			if strings.Contains(s, secret) {
				t.Errorf("printed configuration shows %q: %s", secret, s)
			}
		}
	}
}

// Two banks, each with its own variables.
func TestSnapTwoBanks(t *testing.T) {
	keys := snapKeys(t)
	env := snapEnv(keys)
	env["SNAP_BANKS"] = " bca , bri "
	for k, v := range snapEnv(keys) {
		if strings.HasPrefix(k, "SNAP_BCA_") {
			env["SNAP_BRI_"+strings.TrimPrefix(k, "SNAP_BCA_")] = v
		}
	}
	delete(env, "SNAP_BRI_CHANNEL_ID")
	_, err := load(env)
	if err == nil || !strings.Contains(err.Error(), "SNAP_BRI_CHANNEL_ID is required") || strings.Contains(err.Error(), "SNAP_BCA_") {
		t.Fatalf("error %v, want SNAP_BRI_CHANNEL_ID only", err)
	}
	env["SNAP_BRI_CHANNEL_ID"] = "77"
	banks, err := load(env)
	if err != nil {
		t.Fatal(err)
	}
	if len(banks) != 2 || banks[0].Bank != "bca" || banks[1].Bank != "bri" || banks[1].ChannelID != "77" {
		t.Errorf("banks %v", banks)
	}
}

// Printing a bank's settings shows its URL as a URL setting's error does:
// never a password it carries.
func TestBankConfigShowsNoURLSecret(t *testing.T) {
	if s := (BankConfig{Bank: "bca", BaseURL: "https://u:TOPSECRET@bank.example/snap"}).String(); strings.Contains(s, "TOPSECRET") {
		t.Errorf("BankConfig.String shows the URL's password: %s", s)
	}
}
