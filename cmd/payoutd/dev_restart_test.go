package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/payoutd/payoutd/internal/testenv"
	"github.com/payoutd/payoutd/signature"
)

// runDevUntil starts `payoutd dev` with env and returns its banner and a
// stop that waits for it to exit.
func runDevUntil(t *testing.T, env map[string]string) (banner string, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var stdout testenv.SyncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"dev"}, &stdout, io.Discard, func(k string) string { return env[k] })
	}()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("payoutd dev exited %d", code)
			}
		case <-time.After(30 * time.Second):
			t.Error("payoutd dev did not stop within 30 s")
		}
	}
	t.Cleanup(stop)
	return waitFor(t, &stdout, "Signed afresh at any time", 20*time.Second), stop
}

// With DEV_DATA_DIR, dev keeps its secrets key and demo client across
// restarts: a request signed with the first run's credentials is answered
// 200 by the second (it answered 500 when the key was new each run), the
// banner says the data was resumed, and `payoutd admin --dev` finds the
// running dev's database and key. A SECRETS_KEY that does not open the
// folder's data is refused at start, not on every request.
func TestDevRestartKeepsKeysAndAdminFindsIt(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"HTTP_ADDR": "127.0.0.1:0", "DEV_DATA_DIR": dir, "LOG_LEVEL": "warn"}
	first, stop := runDevUntil(t, env)
	apiKey := bannerField(t, first, `api_key\s+(v3_test_[0-9a-f]+)`)
	secret := bannerField(t, first, `signing_secret\s+([0-9a-f]{64})`)
	walletID := bannerField(t, first, `wallets\s+([0-9a-f-]{36})`)
	if !strings.Contains(first, "is kept: a restart resumes it") {
		t.Fatalf("the first banner does not say the data is kept:\n%s", first)
	}
	if info, err := os.Stat(filepath.Join(dir, devStateFile)); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("%s: %v, mode %v; want readable by the user only", devStateFile, err, info)
	}
	stop()

	second, _ := runDevUntil(t, env)
	if !strings.Contains(second, "resumed: same demo client, keys and balances") || !strings.Contains(second, apiKey) {
		t.Fatalf("the second banner does not resume the first run's client:\n%s", second)
	}
	base := bannerField(t, second, `Ready in \S+ at (http://\S+)`)
	req, _ := http.NewRequest(http.MethodGet, base+"/api/v3/wallets/"+walletID+"/balance", nil)
	req.Header.Set("x-api-key", apiKey)
	req.Header.Set("x-signature", signature.Sign(secret, nil, time.Now()))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"balance":"10000000.0000"`) {
		t.Fatalf("the first run's signed request after a restart: %d %s", resp.StatusCode, body)
	}

	// The admin CLI on the running dev, as the banner says.
	var stdout, stderr strings.Builder
	adminEnv := map[string]string{"PAYOUTD_DEV_DIR": dir, "DATABASE_URL": "postgres://elsewhere.invalid/db"}
	code := run(context.Background(), []string{"admin", "--dev", "reconcile"}, &stdout, &stderr, func(k string) string { return adminEnv[k] })
	var report struct {
		OK      bool `json:"ok"`
		Wallets int  `json:"wallets_checked"`
	}
	if code != 0 || json.Unmarshal([]byte(stdout.String()), &report) != nil || !report.OK || report.Wallets != 2 {
		t.Fatalf("admin --dev reconcile: exit %d, %s %s", code, stdout.String(), stderr.String())
	}
	stdout.Reset()
	code = run(context.Background(), []string{"admin", "--dev", "client", "show", "--client", bannerField(t, second, `client_id\s+([0-9a-f-]{36})`)},
		&stdout, &stderr, func(k string) string { return adminEnv[k] })
	if code != 0 || !strings.Contains(stdout.String(), `"name":"Demo Merchant"`) {
		t.Fatalf("admin --dev client show: exit %d, %s %s", code, stdout.String(), stderr.String())
	}
}

func TestDevRefusesAKeyThatDoesNotOpenItsData(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"HTTP_ADDR": "127.0.0.1:0", "DEV_DATA_DIR": dir, "LOG_LEVEL": "warn"}
	_, stop := runDevUntil(t, env)
	stop()
	env["SECRETS_KEY"] = strings.Repeat("ab", 32)
	var stderr strings.Builder
	code := run(context.Background(), []string{"dev"}, io.Discard, &stderr, func(k string) string { return env[k] })
	if code != 1 || !strings.Contains(stderr.String(), "SECRETS_KEY differs from the key the data in DEV_DATA_DIR") {
		t.Fatalf("dev with another SECRETS_KEY: exit %d, %s", code, stderr.String())
	}
	// A folder with a database but no state (an earlier version's) is
	// refused with what to do.
	os.Remove(filepath.Join(dir, devStateFile))
	delete(env, "SECRETS_KEY")
	stderr.Reset()
	code = run(context.Background(), []string{"dev"}, io.Discard, &stderr, func(k string) string { return env[k] })
	if code != 1 || !strings.Contains(stderr.String(), "holds a database but no dev.json") {
		t.Fatalf("dev on a folder without its state: exit %d, %s", code, stderr.String())
	}
	// admin --dev without a dev to find says so.
	stderr.Reset()
	code = run(context.Background(), []string{"admin", "--dev", "reconcile"}, io.Discard, &stderr, func(string) string { return "" })
	if code != 1 || !strings.Contains(stderr.String(), "PAYOUTD_DEV_DIR") {
		t.Fatalf("admin --dev with no dev: exit %d, %s", code, stderr.String())
	}
}
