package admin_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/payoutd/payoutd/admin"
	"github.com/payoutd/payoutd/internal/config"
	"github.com/payoutd/payoutd/vendors"
)

// rail check prints its report by the CLI's contract even when a step
// fails (exit 1, the failed step named on stderr), and needs nothing but
// the environment: here one without the rail, so the config step fails.
func TestRailCheckReportContract(t *testing.T) {
	env := map[string]string{"APP_ENV": "staging", "SNAP_BANKS": "bri"}
	built := false
	d := admin.RailDeps{Getenv: func(k string) string { return env[k] },
		Vendors: func(config.Config) (vendors.Registry, error) { built = true; return vendors.Registry{}, nil }}
	args := []string{"rail", "check", "--vendor", "xendit"}
	if !admin.IsRailCheck(args) || admin.IsRailCheck([]string{"reconcile"}) {
		t.Fatal("IsRailCheck must tell rail check from the other commands")
	}
	var stdout, stderr bytes.Buffer
	if code := admin.Run(context.Background(), admin.Deps{}, args, &stdout, &stderr); code != 2 || stdout.Len() != 0 {
		t.Fatalf("admin.Run of rail check: exit %d, stdout %q; want 2, it runs through RunRailCheck", code, stdout.String())
	}
	stderr.Reset()
	code := admin.RunRailCheck(context.Background(), d, args, &stdout, &stderr)
	var out map[string]any
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil || code != 1 {
		t.Fatalf("exit %d, stdout %q: want 1 and the report", code, stdout.String())
	}
	checkContract(t, "rail check", out)
	if !strings.Contains(stderr.String(), "failed at step config: XENDIT_SECRET_KEY is not set") || built {
		t.Errorf("stderr %q (vendors built: %v): want the config step's failure, before any vendor is built", stderr.String(), built)
	}
}
