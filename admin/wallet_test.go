package admin_test

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"
)

func TestWalletCreate(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	client := h.ok("client", "create", "--name", "Toko")["client_id"].(string)

	out := h.ok("wallet", "create", "--client", client, "--name", "Main", "--vendor", "simbank")
	if out["name"] != "Main" || out["vendor"] != "simbank" {
		t.Fatalf("wallet create printed %v", out)
	}
	// The wallet_id printed is the wallet's: it takes an adjustment.
	wallet := out["wallet_id"].(string)
	if got := h.ok("wallet", "adjust", "--wallet", wallet, "--amount", "1", "--memo", "x"); got["wallet_id"] != wallet {
		t.Fatalf("adjusting the created wallet printed %v", got)
	}
	other := h.ok("wallet", "create", "--client", client, "--name", "E-wallets", "--vendor", "simwallet", "--provisioning", "--default")
	if other["wallet_id"] == wallet || other["vendor"] != "simwallet" {
		t.Fatalf("second wallet create printed %v", other)
	}

	h.usageError("--client is required", "wallet", "create", "--name", "Main", "--vendor", "simbank")
	h.usageError("--name is required", "wallet", "create", "--client", client, "--vendor", "simbank")
	h.usageError("--vendor is required", "wallet", "create", "--client", client, "--name", "Main")
	h.fails(1, `--vendor: unknown vendor "bankofnowhere"`, "wallet", "create", "--client", client, "--name", "X", "--vendor", "bankofnowhere")
	h.fails(1, "client not found", "wallet", "create", "--client", unknownID, "--name", "X", "--vendor", "simbank")
}

// A wallet on xendit: refused as an unknown vendor until Xendit is
// configured, then created.
func TestWalletCreateXendit(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	client := h.ok("client", "create", "--name", "Toko")["client_id"].(string)
	h.fails(1, `--vendor: unknown vendor "xendit"`, "wallet", "create", "--client", client, "--name", "X", "--vendor", "xendit")

	h.env["XENDIT_CALLBACK_TOKEN"] = "callback-token"
	h.setEnv("XENDIT_SECRET_KEY", "xnd_development_key")
	out := h.ok("wallet", "create", "--client", client, "--name", "Xendit", "--vendor", "xendit")
	if out["vendor"] != "xendit" || out["name"] != "Xendit" {
		t.Fatalf("wallet create printed %v", out)
	}
}

func TestWalletActivate(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	client := h.ok("client", "create", "--name", "Toko")["client_id"].(string)
	wallet := h.ok("wallet", "create", "--client", client, "--name", "Later", "--vendor", "simwallet", "--provisioning")["wallet_id"].(string)

	out := h.ok("wallet", "activate", "--wallet", wallet)
	if out["wallet_id"] != wallet || out["name"] != "Later" || out["vendor"] != "simwallet" || out["state"] != "active" {
		t.Fatalf("wallet activate printed %v", out)
	}

	h.usageError("--wallet is required", "wallet", "activate")
	h.usageError("--wallet must be a UUID", "wallet", "activate", "--wallet", "main")
	h.fails(1, "wallet not found", "wallet", "activate", "--wallet", unknownID)
}

func TestWalletAdjust(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	_, wallet := h.merchant("")

	out := h.ok("wallet", "adjust", "--wallet", wallet, "--amount", "100000", "--memo", "opening balance")
	if out["wallet_id"] != wallet || out["balance"] != "100000.0000" {
		t.Fatalf("wallet adjust printed %v", out)
	}
	if out := h.ok("wallet", "adjust", "--wallet", wallet, "--amount", "-2500.25", "--memo", "correction"); out["balance"] != "97499.7500" {
		t.Fatalf("a negative adjustment printed %v", out)
	}

	h.usageError("--wallet is required", "wallet", "adjust", "--amount", "10", "--memo", "x")
	h.usageError("--amount is required", "wallet", "adjust", "--wallet", wallet, "--memo", "x")
	h.usageError("--memo is required: say why the balance changes", "wallet", "adjust", "--wallet", wallet, "--amount", "10")
	h.fails(1, "wallet not found", "wallet", "adjust", "--wallet", unknownID, "--amount", "10", "--memo", "x")
	h.fails(1, "--memo is required: say why the balance changes", "wallet", "adjust", "--wallet", wallet, "--amount", "10", "--memo", " ")
	// Nothing refused reached the balance.
	if out := h.ok("wallet", "adjust", "--wallet", wallet, "--amount", "0.25", "--memo", "rounding"); out["balance"] != "97500.0000" {
		t.Fatalf("balance after refused adjustments %v", out)
	}
}

// A wallet on a SNAP bank: refused as an unknown vendor until that bank is
// configured (SNAP_BANKS and its SNAP_<B>_* variables), then created; a
// bank that is not configured stays unknown.
func TestWalletCreateSnap(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	client := h.ok("client", "create", "--name", "Toko")["client_id"].(string)
	h.fails(1, `--vendor: unknown vendor "snap:bca"`, "wallet", "create", "--client", client, "--name", "X", "--vendor", "snap:bca")

	private, public := snapKeyFiles(t)
	for k, v := range map[string]string{"SNAP_BCA_BASE_URL": "http://snapsim:8091", "SNAP_BCA_PARTNER_ID": "P",
		"SNAP_BCA_CLIENT_KEY": "K", "SNAP_BCA_CLIENT_SECRET": "S", "SNAP_BCA_CHANNEL_ID": "95221", "SNAP_BCA_SOURCE_ACCOUNT": "8880001111",
		"SNAP_BCA_PRIVATE_KEY_FILE": private, "SNAP_BCA_BANK_PUBLIC_KEY_FILE": public} {
		h.env[k] = v
	}
	h.setEnv("SNAP_BANKS", "bca")
	out := h.ok("wallet", "create", "--client", client, "--name", "BCA", "--vendor", "snap:bca")
	if out["vendor"] != "snap:bca" || out["name"] != "BCA" {
		t.Fatalf("wallet create printed %v", out)
	}
	h.fails(1, `--vendor: unknown vendor "snap:bri"`, "wallet", "create", "--client", client, "--name", "X", "--vendor", "snap:bri")
}

// snapKeyFiles writes a throwaway RSA key pair as PEM files.
func snapKeyFiles(t *testing.T) (private, public string) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKCS8PrivateKey(key)
	pub, _ := x509.MarshalPKIXPublicKey(&key.PublicKey)
	dir := t.TempDir()
	private, public = filepath.Join(dir, "private.pem"), filepath.Join(dir, "bank_public.pem")
	for p, blk := range map[string]*pem.Block{private: {Type: "PRIVATE KEY", Bytes: der}, public: {Type: "PUBLIC KEY", Bytes: pub}} {
		if err := os.WriteFile(p, pem.EncodeToMemory(blk), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return private, public
}
