package main

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"time"
)

// groupStage is how one of the api's group commits (payoutd_group_size and
// payoutd_group_run_duration_seconds, by group) behaved over a sub-phase's
// window: how many groups ran, how many requests each carried, how long a
// run took, and its leaders' busy time per second of window (above 1 when
// several ran at once). It splits a create's time between its stages (the
// create's insert, the inline submit's vendor call and move, the signature
// records, the wallet reads) without instrumenting the service.
type groupStage struct {
	Process   string  `json:"process,omitempty"` // "worker"; the api's have none
	Group     string  `json:"group"`
	Runs      int64   `json:"runs"`
	MeanSize  float64 `json:"mean_size"`
	MeanRunMS float64 `json:"mean_run_ms"`
	BusyShare float64 `json:"busy_per_s"`
}

// text is the stage on one line of a report.
func (g groupStage) text() string {
	name := g.Group
	if g.Process != "" {
		name = g.Process + " " + g.Group
	}
	return fmt.Sprintf("%-17s %6d runs, %5.1f requests each, %6.2f ms a run, %.2f leaders busy",
		name, g.Runs, g.MeanSize, g.MeanRunMS, g.BusyShare)
}

// groupStages is a windowHooks that reads a process's /metrics (at
// prof's base, with the operator credentials the run made up for it) when
// the window opens and when it closes, and adds the difference to ev:
// the api's, or with -evidence the worker's too (process "worker").
type groupStages struct {
	prof    *serverProfile
	ev      *phaseEvidence
	process string
	start   map[string]float64
	at      time.Time
}

func (g *groupStages) opened() {
	g.at = time.Now()
	var err error
	if g.start, err = g.scrape(); err != nil {
		g.ev.Errors = append(g.ev.Errors, cmp.Or(g.process, "api")+" group stages: "+err.Error())
	}
}

func (g *groupStages) closed() {
	if g.start == nil {
		return
	}
	window := time.Since(g.at).Seconds()
	end, err := g.scrape()
	if err != nil {
		g.ev.Errors = append(g.ev.Errors, cmp.Or(g.process, "api")+" group stages: "+err.Error())
		return
	}
	stages := stagesBetween(g.start, end, window)
	for i := range stages {
		stages[i].Process = g.process
	}
	g.ev.Groups = append(g.ev.Groups, stages...)
}

// groupSeries matches the sums and counts of the two group metrics.
var groupSeries = regexp.MustCompile(`^payoutd_group_(size|run_duration_seconds)_(sum|count)\{group="([^"]+)"\} (\S+)$`)

// scrape reads the group metrics' sums and counts, keyed "group metric
// sum|count".
func (g *groupStages) scrape() (map[string]float64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, g.prof.base+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	req.SetBasicAuth(g.prof.user, g.prof.password)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	return parseGroupSeries(resp.Body)
}

// parseGroupSeries reads the group metrics out of Prometheus' text format.
func parseGroupSeries(r io.Reader) (map[string]float64, error) {
	out := map[string]float64{}
	lines := bufio.NewScanner(r)
	lines.Buffer(make([]byte, 64*1024), 1024*1024)
	for lines.Scan() {
		m := groupSeries.FindStringSubmatch(lines.Text())
		if m == nil {
			continue
		}
		v, err := strconv.ParseFloat(m[4], 64)
		if err != nil {
			return nil, fmt.Errorf("metric %s: %w", lines.Text(), err)
		}
		out[m[3]+" "+m[1]+" "+m[2]] = v
	}
	return out, lines.Err()
}

// stagesBetween is what each group did between two scrapes window seconds
// apart, in group name order; groups that ran nothing are left out.
func stagesBetween(start, end map[string]float64, window float64) []groupStage {
	delta := func(group, metric, part string) float64 {
		key := group + " " + metric + " " + part
		return end[key] - start[key]
	}
	var names []string
	for key := range end {
		var group, metric, part string
		if _, err := fmt.Sscanf(key, "%s %s %s", &group, &metric, &part); err == nil && metric == "size" && part == "count" {
			names = append(names, group)
		}
	}
	sort.Strings(names)
	var out []groupStage
	for _, name := range names {
		runs := delta(name, "size", "count")
		if runs <= 0 {
			continue
		}
		busy := delta(name, "run_duration_seconds", "sum")
		s := groupStage{Group: name, Runs: int64(runs), MeanSize: delta(name, "size", "sum") / runs,
			MeanRunMS: busy / runs * 1000}
		if window > 0 {
			s.BusyShare = busy / window
		}
		out = append(out, s)
	}
	return out
}
