package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors"
	"github.com/payoutd/payoutd/vendors/xendit"
)

func TestVendorSimXenditRefusesBadConfiguration(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"--provider", "paypal"}, nil, `--provider "paypal": want sandbox, xendit or snap`},
		{[]string{"--provider", "xendit"}, nil, "XENDIT_SECRET_KEY is required with --provider xendit"},
		{[]string{"--provider", "xendit"}, map[string]string{"XENDIT_SECRET_KEY": "k"}, "XENDIT_CALLBACK_TOKEN is required with --provider xendit"},
		{[]string{"--provider", "xendit"}, map[string]string{"XENDIT_SECRET_KEY": "s", "XENDIT_CALLBACK_TOKEN": "s"}, "must differ"},
		{[]string{"--provider", "xendit", "--callback-url", "127.0.0.1/cb"}, map[string]string{"XENDIT_SECRET_KEY": "k", "XENDIT_CALLBACK_TOKEN": "c"}, "callback URL"},
		{[]string{"--provider", "xendit", "--callback-url", "ftp://TOPSECRET@api:8080/cb"}, map[string]string{"XENDIT_SECRET_KEY": "k", "XENDIT_CALLBACK_TOKEN": "c"}, "callback URL=ftp://xxxxx@api:8080/…"},
		// The default provider is unchanged: still the sandbox's variables.
		{nil, nil, "VENDORSIM_TOKEN is required"},
	} {
		var stderr strings.Builder
		code := run(context.Background(), append([]string{"vendorsim"}, tt.args...), io.Discard, &stderr, func(k string) string { return tt.env[k] })
		if code != 1 || !strings.Contains(stderr.String(), tt.want) {
			t.Errorf("%v %v: exit %d, stderr %q; want 1 and %q", tt.args, tt.env, code, stderr.String(), tt.want)
		}
		if strings.Contains(stderr.String(), "TOPSECRET") {
			t.Errorf("%v: stderr shows the URL's secret: %q", tt.args, stderr.String())
		}
	}
}

// payoutd vendorsim --provider xendit serves Xendit's API to the adapter
// and POSTs a webhook with the callback token to VENDORSIM_CALLBACK_URL/xendit.
func TestVendorSimXenditServesAndCallsBack(t *testing.T) {
	t.Parallel()
	const key, token = "xnd_development_cmdtest", "cmdtest-callback-token"
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
	env := map[string]string{"XENDIT_SECRET_KEY": key, "XENDIT_CALLBACK_TOKEN": token,
		"VENDORSIM_CALLBACK_URL": recv.URL + "/vendor-callbacks", "SANDBOX_COMPLETE_AFTER": "1ms"}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stdoutR, stdoutW := io.Pipe()
	done := make(chan int, 1)
	go func() {
		code := run(ctx, []string{"vendorsim", "--provider", "xendit", "--addr", "127.0.0.1:0"}, stdoutW, io.Discard, func(k string) string { return env[k] })
		stdoutW.Close()
		done <- code
	}()
	banner, err := bufio.NewReader(stdoutR).ReadString('\n')
	if err != nil {
		t.Fatalf("no banner: %v", err)
	}
	go io.Copy(io.Discard, stdoutR)
	addr := regexp.MustCompile(`http://(127\.0\.0\.1:\d+)`).FindStringSubmatch(banner)
	if addr == nil {
		t.Fatalf("banner %q names no address", banner)
	}
	v, err := xendit.New(xendit.Options{BaseURL: "http://" + addr[1], SecretKey: key, CallbackToken: token})
	if err != nil {
		t.Fatal(err)
	}
	res, err := v.Submit(ctx, vendors.Payout{HolderName: "Budi Santoso", Reference: "cmd-xnd-ref", BankCode: "BCA", AccountNo: "1234567890", TransferType: models.BIFAST, Amount: models.Rupiah(97_500)})
	if err != nil || res.Reference != "cmd-xnd-ref" {
		t.Fatalf("Submit = %+v, %v", res, err)
	}
	var h hook
	select {
	case h = <-hooks:
	case <-time.After(20 * time.Second):
		t.Fatal("no webhook") // a guard against hanging, not a timing assertion
	}
	if h.path != "/vendor-callbacks/xendit" {
		t.Errorf("webhook to %s", h.path)
	}
	got, err := v.ParseCallback(h.path, h.hdr, h.body, time.Now())
	if err != nil || got.Reference != "cmd-xnd-ref" || got.Status != vendors.PayoutSuccess {
		t.Errorf("ParseCallback = %+v, %v", got, err)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("payoutd vendorsim --provider xendit exited %d after cancellation, want 0", code)
	}
}
