package main

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"
)

// The scrape reads the group metrics' sums and counts out of the text
// format and ignores everything else; the stages are the differences over
// the window, per group, without the groups that did not run.
func TestGroupStagesAreTheDifferenceOverTheWindow(t *testing.T) {
	scrape := func(text string) map[string]float64 {
		t.Helper()
		m, err := parseGroupSeries(strings.NewReader(text))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	start := scrape(`# HELP payoutd_group_size Requests per group.
payoutd_group_size_bucket{group="create",le="1"} 3
payoutd_group_size_sum{group="create"} 10
payoutd_group_size_count{group="create"} 4
payoutd_group_run_duration_seconds_sum{group="create"} 0.5
payoutd_group_run_duration_seconds_count{group="create"} 4
payoutd_group_size_sum{group="move"} 2
payoutd_group_size_count{group="move"} 2
payoutd_group_run_duration_seconds_sum{group="move"} 0.1
payoutd_group_run_duration_seconds_count{group="move"} 2
go_goroutines 12
`)
	end := scrape(`payoutd_group_size_sum{group="create"} 810
payoutd_group_size_count{group="create"} 104
payoutd_group_run_duration_seconds_sum{group="create"} 1.5
payoutd_group_run_duration_seconds_count{group="create"} 104
payoutd_group_size_sum{group="inline_submit"} 64
payoutd_group_size_count{group="inline_submit"} 4
payoutd_group_run_duration_seconds_sum{group="inline_submit"} 0.04
payoutd_group_run_duration_seconds_count{group="inline_submit"} 4
payoutd_group_size_sum{group="move"} 2
payoutd_group_size_count{group="move"} 2
payoutd_group_run_duration_seconds_sum{group="move"} 0.1
payoutd_group_run_duration_seconds_count{group="move"} 2
`)
	got := stagesBetween(start, end, 2)
	want := []groupStage{
		{Group: "create", Runs: 100, MeanSize: 8, MeanRunMS: 10, BusyShare: 0.5},
		{Group: "inline_submit", Runs: 4, MeanSize: 16, MeanRunMS: 10, BusyShare: 0.02},
	}
	if len(got) != len(want) {
		t.Fatalf("stages %+v, want %+v", got, want)
	}
	for i, w := range want {
		g := got[i]
		if g.Group != w.Group || g.Runs != w.Runs || !near(g.MeanSize, w.MeanSize) || !near(g.MeanRunMS, w.MeanRunMS) || !near(g.BusyShare, w.BusyShare) {
			t.Errorf("stage %d: %+v, want %+v", i, g, w)
		}
	}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// A run with -server-profile reports the api's group commits under the
// result, one line each, and says why when they could not be read.
func TestReportShowsTheGroupStages(t *testing.T) {
	lat := []time.Duration{time.Millisecond}
	m := &measurement{latencies: lat, elapsed: time.Second}
	d := runDescription{scenario: mustScenario("balance"), options: options{scenario: "balance"}, concurrency: 1,
		server: serverExternal, where: "http://api.test"}
	r := newResult(d, m, nil)
	r.Groups = []groupStage{{Group: "signature_records", Runs: 100, MeanSize: 4, MeanRunMS: 0.15, BusyShare: 0.8},
		{Group: "wallet_reads", Runs: 80, MeanSize: 5.5, MeanRunMS: 0.2, BusyShare: 0.75}}
	r.GroupErrors = []string{"GET /metrics: 401 Unauthorized"}
	var out bytes.Buffer
	printReport(&out, d, r, m)
	for _, want := range []string{
		"groups    signature_records    100 runs,   4.0 requests each,   0.15 ms a run, 0.80 leaders busy\n",
		"          wallet_reads          80 runs,   5.5 requests each,   0.20 ms a run, 0.75 leaders busy\n",
		"groups    unavailable: GET /metrics: 401 Unauthorized\n",
		`"groups":[{"group":"signature_records","runs":100`,
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}

// The worker's group commits are told from the api's on the report.
func TestWorkerGroupStagesAreMarked(t *testing.T) {
	g := groupStage{Process: "worker", Group: "webhook_claims", Runs: 10, MeanSize: 6.5, MeanRunMS: 4.1, BusyShare: 0.44}
	if got, want := g.text(), "worker webhook_claims     10 runs,   6.5 requests each,   4.10 ms a run, 0.44 leaders busy"; got != want {
		t.Fatalf("text\n got %q\nwant %q", got, want)
	}
}
