package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/signature"
	"github.com/payoutd/payoutd/vendors"
	"github.com/payoutd/payoutd/vendors/vendorsim"
)

func TestVendorSimRefusesBadConfiguration(t *testing.T) {
	t.Parallel()
	tests := []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{}, "VENDORSIM_TOKEN is required"},
		{map[string]string{"VENDORSIM_TOKEN": "  ", "VENDORSIM_CALLBACK_SECRET": "c"}, "VENDORSIM_TOKEN is required"},
		{map[string]string{"VENDORSIM_TOKEN": "t"}, "VENDORSIM_CALLBACK_SECRET is required"},
		// One secret for both jobs: whoever may call the simulator could
		// also forge its callbacks.
		{map[string]string{"VENDORSIM_TOKEN": "same", "VENDORSIM_CALLBACK_SECRET": "same"}, "must differ"},
		// The old single variable is refused by name, not ignored.
		{map[string]string{"VENDORSIM_SECRET": "s", "VENDORSIM_TOKEN": "t", "VENDORSIM_CALLBACK_SECRET": "c"}, "VENDORSIM_SECRET"},
		{map[string]string{"VENDORSIM_TOKEN": "t", "VENDORSIM_CALLBACK_SECRET": "c", "SANDBOX_COMPLETE_AFTER": "2"}, "SANDBOX_COMPLETE_AFTER"},
		{map[string]string{"VENDORSIM_TOKEN": "t", "VENDORSIM_CALLBACK_SECRET": "c", "SANDBOX_COMPLETE_AFTER": "-1s"}, "SANDBOX_COMPLETE_AFTER"},
		{map[string]string{"VENDORSIM_TOKEN": "t", "VENDORSIM_CALLBACK_SECRET": "c", "VENDORSIM_CALLBACK_URL": "127.0.0.1:8080/cb"}, "VENDORSIM_CALLBACK_URL"},
		{map[string]string{"VENDORSIM_TOKEN": "t", "VENDORSIM_CALLBACK_SECRET": "c", "VENDORSIM_CALLBACK_URL": "ftp://ops:TOPSECRET@api:8080/cb"}, "VENDORSIM_CALLBACK_URL=ftp://xxxxx@api:8080/…"},
		{map[string]string{"VENDORSIM_TOKEN": "t", "VENDORSIM_CALLBACK_SECRET": "c", "VENDORSIM_CALLBACK_URL": "TOPSECRET:@api:8080/cb"}, "VENDORSIM_CALLBACK_URL (its value not shown"},
		{map[string]string{"VENDORSIM_TOKEN": "t", "VENDORSIM_CALLBACK_SECRET": "c", "VENDORSIM_ADDR": "127.0.0.1:-1"}, "payoutd vendorsim"},
	}
	for _, tt := range tests {
		var stderr strings.Builder
		code := run(context.Background(), []string{"vendorsim"}, io.Discard, &stderr, func(k string) string { return tt.env[k] })
		if code != 1 || !strings.Contains(stderr.String(), tt.want) {
			t.Errorf("env %v: exit %d, stderr %q; want 1 and %q", tt.env, code, stderr.String(), tt.want)
		}
		if strings.Contains(stderr.String(), "TOPSECRET") {
			t.Errorf("env %v: stderr shows the URL's secret: %q", tt.env, stderr.String())
		}
	}
}

// payoutd vendorsim serves the client adapter over a socket, sends a
// callback signed with the callback secret (never with the bearer token)
// when a payout completes, and stops when its context ends.
func TestVendorSimServesAndCallsBack(t *testing.T) {
	t.Parallel()
	const token, callbackSecret = "vendorsim-test-token", "vendorsim-test-callback-secret"
	callbacks := make(chan *http.Request, 10)
	bodies := make(chan []byte, 10)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		callbacks <- r
		bodies <- b
	}))
	defer recv.Close()
	env := map[string]string{
		"VENDORSIM_ADDR": "127.0.0.1:0", "VENDORSIM_TOKEN": token, "VENDORSIM_CALLBACK_SECRET": callbackSecret,
		"VENDORSIM_CALLBACK_URL": recv.URL + "/vendor-callbacks", "SANDBOX_COMPLETE_AFTER": "1ms",
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stdoutR, stdoutW := io.Pipe()
	stderrR, stderrW := io.Pipe()
	done := make(chan int, 1)
	go func() {
		code := run(ctx, []string{"vendorsim"}, stdoutW, stderrW, func(k string) string { return env[k] })
		stdoutW.Close()
		stderrW.Close()
		done <- code
	}()
	logs := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(stderrR)
		for sc.Scan() {
			logs <- sc.Text()
		}
		close(logs)
	}()
	banner, err := bufio.NewReader(stdoutR).ReadString('\n')
	if err != nil {
		t.Fatalf("no banner: %v", err)
	}
	go io.Copy(io.Discard, stdoutR)
	addr := regexp.MustCompile(`http://(127\.0\.0\.1:\d+)/`).FindStringSubmatch(banner)
	if addr == nil {
		t.Fatalf("banner %q names no address", banner)
	}
	var first map[string]any
	if err := json.Unmarshal([]byte(<-logs), &first); err != nil || first["msg"] != "vendorsim listening" {
		t.Errorf("first log line %v, %v; want the JSON line vendorsim listening", first, err)
	}

	c, err := vendorsim.NewClient("http://"+addr[1], "simwallet", vendorsim.Secrets{Token: token, CallbackSecret: callbackSecret}, vendorsim.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Submit(ctx, vendors.Payout{HolderName: "Budi Santoso", Reference: "cmd-ref", BankCode: "gopay", AccountNo: "081234567890", TransferType: models.BIFAST, Amount: models.Rupiah(97_500)})
	if err != nil || res.Reference != "cmd-ref" {
		t.Fatalf("Submit = %+v, %v", res, err)
	}
	var r *http.Request
	select {
	case r = <-callbacks:
	case <-time.After(20 * time.Second):
		t.Fatal("no callback") // a guard against hanging, not a timing assertion
	}
	body := <-bodies
	if r.URL.Path != "/vendor-callbacks/simwallet" {
		t.Errorf("callback to %s", r.URL.Path)
	}
	got, err := c.ParseCallback(r.URL.RequestURI(), r.Header, body, time.Now())
	if err != nil || got != (vendors.PayoutResult{Reference: "cmd-ref", Status: vendors.PayoutSuccess}) {
		t.Errorf("ParseCallback = %+v, %v", got, err)
	}
	if signature.Verify(token, r.Header.Get(vendorsim.SignatureHeader), body, time.Now()).Diagnosis == signature.OK {
		t.Error("the callback verifies with the bearer token: one secret does both jobs")
	}

	cancel()
	if code := <-done; code != 0 {
		t.Errorf("payoutd vendorsim exited %d after cancellation, want 0", code)
	}
	var sawShutdown bool
	for line := range logs {
		sawShutdown = sawShutdown || strings.Contains(line, `"vendorsim shutting down"`)
	}
	if !sawShutdown {
		t.Error("no shutdown log line")
	}
}
