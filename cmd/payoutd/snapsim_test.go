package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors"
	"github.com/payoutd/payoutd/vendors/snap"
)

// snapPlatformKeyFile writes a throwaway platform key (PKCS #8 PEM).
func snapPlatformKeyFile(t *testing.T) (string, *rsa.PrivateKey) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKCS8PrivateKey(key)
	p := filepath.Join(t.TempDir(), "platform.pem")
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return p, key
}

func TestVendorSimSnapRefusesBadConfiguration(t *testing.T) {
	t.Parallel()
	keyFile, _ := snapPlatformKeyFile(t)
	creds := map[string]string{"SNAP_BCA_PARTNER_ID": "P", "SNAP_BCA_CLIENT_KEY": "K", "SNAP_BCA_CLIENT_SECRET": "S"}
	with := func(extra map[string]string) map[string]string {
		m := map[string]string{}
		for k, v := range creds {
			m[k] = v
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	for _, tt := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"--provider", "snap"}, nil, "--bank is required with --provider snap"},
		{[]string{"--provider", "snap", "--bank", "dana"}, nil, "dana has no BI bank code"},
		{[]string{"--provider", "snap", "--bank", "nowhere"}, nil, `unknown bank "nowhere"`},
		{[]string{"--provider", "xendit", "--bank", "bca"}, nil, "--bank is only for --provider snap"},
		{[]string{"--provider", "snap", "--bank", "bca"}, nil, "SNAP_BCA_PARTNER_ID is required with --provider snap --bank bca"},
		{[]string{"--provider", "snap", "--bank", "bca"}, map[string]string{"SNAP_BCA_PARTNER_ID": "P", "SNAP_BCA_CLIENT_KEY": "K"}, "SNAP_BCA_CLIENT_SECRET is required"},
		{[]string{"--provider", "snap", "--bank", "bca"}, with(map[string]string{"SNAP_BCA_CLIENT_SECRET": "K"}), "must differ"},
		{[]string{"--provider", "snap", "--bank", "bca"}, with(nil), "SNAP_BCA_PLATFORM_PUBLIC_KEY_FILE (or SNAP_BCA_PRIVATE_KEY_FILE) is required"},
		{[]string{"--provider", "snap", "--bank", "bca"}, with(map[string]string{"SNAP_BCA_PRIVATE_KEY_FILE": "/nonexistent/key.pem"}), `SNAP_BCA_PRIVATE_KEY_FILE="/nonexistent/key.pem": cannot read it`},
		{[]string{"--provider", "snap", "--bank", "bca"}, with(map[string]string{"SNAP_BCA_PLATFORM_PUBLIC_KEY_FILE": keyFile}), "SNAP_BCA_PLATFORM_PUBLIC_KEY_FILE"},
		{[]string{"--provider", "snap", "--bank", "bca"}, with(map[string]string{"SNAP_BCA_PRIVATE_KEY_FILE": keyFile, "SNAPSIM_BANK_PRIVATE_KEY_FILE": "/nonexistent/bank.pem"}), "SNAPSIM_BANK_PRIVATE_KEY_FILE"},
		{[]string{"--provider", "snap", "--bank", "bca", "--callback-url", "127.0.0.1/cb"}, with(map[string]string{"SNAP_BCA_PRIVATE_KEY_FILE": keyFile}), "snap callback URL"},
		{[]string{"--provider", "snap", "--bank", "bca", "--callback-url", "ftp://u:TOPSECRET@api/cb"}, with(map[string]string{"SNAP_BCA_PRIVATE_KEY_FILE": keyFile}), "snap callback URL=ftp://xxxxx@api/…"},
	} {
		var stderr strings.Builder
		code := run(context.Background(), append([]string{"vendorsim"}, tt.args...), io.Discard, &stderr, func(k string) string { return tt.env[k] })
		if code != 1 || !strings.Contains(stderr.String(), tt.want) {
			t.Errorf("%v %v: exit %d, stderr %q; want 1 and %q", tt.args, tt.env, code, stderr.String(), tt.want)
		}
		if strings.Contains(stderr.String(), "CLIENT_SECRET=S") || strings.Contains(stderr.String(), "TOPSECRET") {
			t.Errorf("stderr shows a secret: %q", stderr.String())
		}
	}
}

// payoutd vendorsim --provider snap --bank bca serves the bank to the
// adapter configured with the same variables, makes a bank key and names
// its public half, and POSTs a notification signed with it to
// VENDORSIM_CALLBACK_URL/snap:bca.
func TestVendorSimSnapServesAndNotifies(t *testing.T) {
	t.Parallel()
	keyFile, platform := snapPlatformKeyFile(t)
	type hook struct {
		path string
		hdr  http.Header
		body []byte
	}
	hooks := make(chan hook, 10)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		hooks <- hook{r.URL.Path, r.Header.Clone(), b}
	}))
	defer recv.Close()
	env := map[string]string{"SNAP_BCA_PARTNER_ID": "CMDPARTNER", "SNAP_BCA_CLIENT_KEY": "cmd-client-key", "SNAP_BCA_CLIENT_SECRET": "cmd-client-secret",
		"SNAP_BCA_SOURCE_ACCOUNT": "8880001111", "SNAP_BCA_PRIVATE_KEY_FILE": keyFile,
		"VENDORSIM_CALLBACK_URL": recv.URL + "/vendor-callbacks", "SANDBOX_COMPLETE_AFTER": "1ms"}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stdoutR, stdoutW := io.Pipe()
	done := make(chan int, 1)
	go func() {
		code := run(ctx, []string{"vendorsim", "--provider", "snap", "--bank", "bca", "--addr", "127.0.0.1:0"}, stdoutW, io.Discard, func(k string) string { return env[k] })
		stdoutW.Close()
		done <- code
	}()
	out := bufio.NewReader(stdoutR)
	banner, err := out.ReadString('\n')
	if err != nil {
		t.Fatalf("no banner: %v", err)
	}
	keyLine, err := out.ReadString('\n')
	if err != nil {
		t.Fatalf("no bank key line: %v", err)
	}
	go io.Copy(io.Discard, out)
	addr := regexp.MustCompile(`http://(127\.0\.0\.1:\d+)`).FindStringSubmatch(banner)
	pubPath := regexp.MustCompile(`public key is (\S+) \(set SNAP_BCA_BANK_PUBLIC_KEY_FILE`).FindStringSubmatch(keyLine)
	if addr == nil || pubPath == nil {
		t.Fatalf("banner %q and %q name no address or key file", banner, keyLine)
	}
	t.Cleanup(func() { os.Remove(pubPath[1]) })
	pemBytes, err := os.ReadFile(pubPath[1])
	if err != nil {
		t.Fatal(err)
	}
	bankKey, err := snap.ParseRSAPublicKey(pemBytes)
	if err != nil {
		t.Fatal(err)
	}
	v, err := snap.New(snap.Options{Bank: "bca", BaseURL: "http://" + addr[1], PartnerID: "CMDPARTNER", ClientKey: "cmd-client-key",
		ClientSecret: "cmd-client-secret", ChannelID: "95221", SourceAccountNo: "8880001111", PrivateKey: platform, BankPublicKey: bankKey, Notifications: true})
	if err != nil {
		t.Fatal(err)
	}
	res, err := v.Submit(ctx, vendors.Payout{HolderName: "Budi Santoso", Reference: "cmd-snap-ref", BankCode: "bri", AccountNo: "1234567890", TransferType: models.BIFAST, Amount: models.Rupiah(97_500)})
	if err != nil || res.Reference != "cmd-snap-ref" {
		t.Fatalf("Submit = %+v, %v", res, err)
	}
	var h hook
	select {
	case h = <-hooks:
	case <-time.After(20 * time.Second):
		t.Fatal("no notification") // a guard against hanging, not a timing assertion
	}
	if h.path != "/vendor-callbacks/snap/bca" {
		t.Errorf("notification to %s", h.path)
	}
	got, err := v.ParseCallback(h.path, h.hdr, h.body, time.Now())
	if err != nil || got.Reference != "cmd-snap-ref" || got.Status != vendors.PayoutSuccess {
		t.Errorf("ParseCallback = %+v, %v", got, err)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("payoutd vendorsim --provider snap exited %d after cancellation, want 0", code)
	}
}
