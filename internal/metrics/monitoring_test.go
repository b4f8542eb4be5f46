package metrics

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The alert rules and the Grafana dashboard in deploy/ only name metrics
// this package declares (a renamed metric would silence an alert), the
// rules pass promtool's check and their unit tests, and the dashboard is a
// dashboard: panels, each with a query.

var (
	alertRules     = filepath.Join("..", "..", "deploy", "prometheus", "alerts.yml")
	alertRuleTests = filepath.Join("..", "..", "deploy", "prometheus", "alerts_test.yml")
	dashboard      = filepath.Join("..", "..", "deploy", "grafana", "payoutd.json")
)

var metricName = regexp.MustCompile(`\b(payoutd_[a-z_]+)`)

// declaredMetrics are the metric names this package's sources declare.
func declaredMetrics(t *testing.T) map[string]bool {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	decl := regexp.MustCompile(`(?:Name:\s*|NewDesc\()"(payoutd_[a-z_]+)"`)
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range decl.FindAllStringSubmatch(string(src), -1) {
			names[m[1]] = true
		}
	}
	return names
}

func TestMonitoringNamesDeclaredMetrics(t *testing.T) {
	declared := declaredMetrics(t)
	if len(declared) < 10 {
		t.Fatalf("found only %d declared metrics: %v", len(declared), declared)
	}
	for _, path := range []string{alertRules, dashboard} {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range metricName.FindAllString(string(raw), -1) {
			base := name
			for _, suffix := range []string{"_bucket", "_count", "_sum"} {
				base = strings.TrimSuffix(base, suffix)
			}
			if !declared[base] {
				t.Errorf("%s uses %s, which internal/metrics does not declare", path, name)
			}
		}
	}
}

func TestDashboardIsADashboard(t *testing.T) {
	raw, err := os.ReadFile(dashboard)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Title  string `json:"title"`
		UID    string `json:"uid"`
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("%s: %v", dashboard, err)
	}
	if d.Title == "" || d.UID == "" || len(d.Panels) < 8 {
		t.Fatalf("%s: title %q, uid %q, %d panels", dashboard, d.Title, d.UID, len(d.Panels))
	}
	for _, p := range d.Panels {
		if p.Title == "" || len(p.Targets) == 0 || p.Targets[0].Expr == "" {
			t.Errorf("panel %q has no query", p.Title)
		}
	}
}

// promtool comes with Debian's prometheus package (.ci/run installs it).
func TestAlertRulesPassPromtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("promtool is missing (CI=true): .ci/run installs the prometheus package")
		}
		t.Skip("promtool is missing: apt-get install prometheus to check the alert rules")
	}
	for _, args := range [][]string{{"check", "rules", alertRules}, {"test", "rules", alertRuleTests}} {
		if out, err := exec.Command(promtool, args...).CombinedOutput(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}
