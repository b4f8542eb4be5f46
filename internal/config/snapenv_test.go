package config

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// A SNAP bank's settings, for the tests of what Load composes (each
// setting's own checks are vendors/snap's tests).

var (
	testKeyOnce sync.Once
	testKey     *rsa.PrivateKey
)

// snapKeys writes a throwaway RSA key pair (PKCS #8 private, PKIX public)
// and returns their paths.
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
	return map[string]string{"private": write("private.pem", "PRIVATE KEY", pkcs8), "public": write("public.pem", "PUBLIC KEY", pub)}
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
