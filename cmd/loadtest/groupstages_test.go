package main

import (
	"math"
	"strings"
	"testing"
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
