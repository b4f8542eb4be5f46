package main

import (
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/payoutd/payoutd/internal/testenv"
	"github.com/payoutd/payoutd/signature"
)

// TestDevModeAnswersTheSignedRequestItPrints starts `payoutd dev` as a new
// user would, then makes the calls its banner (and README.md) show.
func TestDevModeAnswersTheSignedRequestItPrints(t *testing.T) {
	env := map[string]string{"HTTP_ADDR": "127.0.0.1:0", "DEV_DATA_DIR": t.TempDir(), "LOG_LEVEL": "warn"}
	started := time.Now()
	banner, _ := runDevUntil(t, env)
	t.Logf("payoutd dev ready after %s (goal: under 5 s)", time.Since(started).Round(time.Millisecond))
	field := func(re string) string {
		m := regexp.MustCompile(re).FindStringSubmatch(banner)
		if m == nil {
			t.Fatalf("banner lacks %s:\n%s", re, banner)
		}
		return m[1]
	}
	apiKey := field(`api_key\s+(v3_test_[0-9a-f]+)`)
	secret := field(`signing_secret\s+([0-9a-f]{64})`)
	walletID := field(`wallets\s+([0-9a-f-]{36})`)
	base := field(`Ready in \S+ at (http://\S+)`)
	balanceURL := base + "/api/v3/wallets/" + walletID + "/balance"

	// The request signed in Go, as the README's Go snippet does.
	req, _ := http.NewRequest(http.MethodGet, balanceURL, nil)
	req.Header.Set("x-api-key", apiKey)
	req.Header.Set("x-signature", signature.Sign(secret, nil, time.Now()))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"balance":"10000000.0000"`) {
		t.Fatalf("signed balance: %d %s", resp.StatusCode, body)
	}

	// The banner's own shell commands, pasted as printed.
	for _, marker := range []string{"A signed request, valid for 5 minutes:", "Signed afresh at any time (bash + openssl; the export line sets what README.md's walk-through uses):"} {
		script := shellBlock(t, banner, marker)
		for _, tool := range []string{"bash", "curl", "openssl"} {
			if _, err := exec.LookPath(tool); err != nil {
				if os.Getenv("CI") == "true" {
					t.Fatalf("%s not installed (CI=true): .ci/run installs it", tool)
				}
				t.Skipf("%s not installed; the pasted commands cannot be run", tool)
			}
		}
		out, err := exec.Command("bash", "-c", script).CombinedOutput()
		if err != nil || !strings.Contains(string(out), `"balance":"10000000.0000"`) {
			t.Fatalf("pasted commands after %q failed: %v\n%s\n--- script ---\n%s", marker, err, out, script)
		}
	}

	// The queue dashboard is behind the printed operator credentials.
	password := field(`user admin, password ([0-9a-f]+)`)
	dash, _ := http.NewRequest(http.MethodGet, base+"/ops/queues", nil)
	if r, err := http.DefaultClient.Do(dash); err != nil || r.StatusCode != 401 {
		t.Fatalf("dashboard without credentials: %v %v", r, err)
	}
	dash.SetBasicAuth("admin", password)
	if r, err := http.DefaultClient.Do(dash); err != nil || r.StatusCode != 200 {
		t.Fatalf("dashboard with credentials: %v %v", r, err)
	}
}

// waitFor polls the output until it contains marker.
func waitFor(t *testing.T, out *testenv.SyncBuffer, marker string, limit time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if s := out.String(); strings.Contains(s, marker) {
			time.Sleep(50 * time.Millisecond) // the rest of the banner
			return out.String()
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no %q within %s; output so far:\n%s", marker, limit, out.String())
	return ""
}

// shellBlock returns the indented lines after marker, up to a blank line.
func shellBlock(t *testing.T, banner, marker string) string {
	t.Helper()
	_, rest, ok := strings.Cut(banner, marker)
	if !ok {
		t.Fatalf("banner lacks %q", marker)
	}
	var lines []string
	for _, line := range strings.Split(strings.TrimLeft(rest, "\n"), "\n") {
		if strings.TrimSpace(line) == "" {
			break
		}
		lines = append(lines, strings.TrimSpace(line))
	}
	return strings.Join(lines, "\n")
}
