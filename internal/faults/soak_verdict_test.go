package faults

import (
	"image"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The soak's schedule, verdicts and plot, on made-up samples: these run in
// every `go test` (no backends), unlike the soak itself.

func TestSoakFaultPlan(t *testing.T) {
	for _, tc := range []struct {
		duration time.Duration
		faults   int
	}{{4 * time.Minute, 5}, {30 * time.Minute, 5}, {45 * time.Minute, 10}} {
		plan, err := planSoakFaults(tc.duration, 42)
		if err != nil {
			t.Fatalf("%s: %v", tc.duration, err)
		}
		if len(plan) != tc.faults {
			t.Fatalf("%s: %d faults, want %d: %v", tc.duration, len(plan), tc.faults, plan)
		}
		kinds := map[string]int{}
		for i, f := range plan {
			kinds[f.kind]++
			if f.at < soakFaultEarliest || f.at > tc.duration-soakFaultQuietEnd {
				t.Errorf("%s: %s at %s, outside [%s, %s]", tc.duration, f.kind, f.at, soakFaultEarliest, tc.duration-soakFaultQuietEnd)
			}
			if i > 0 && f.at-plan[i-1].at < soakFaultGap {
				t.Errorf("%s: %s at %s only %s after %s", tc.duration, f.kind, f.at, f.at-plan[i-1].at, plan[i-1].kind)
			}
		}
		for _, k := range soakFaultKinds {
			if kinds[k] != tc.faults/len(soakFaultKinds) {
				t.Errorf("%s: %s planned %d times, want %d: %v", tc.duration, k, kinds[k], tc.faults/len(soakFaultKinds), plan)
			}
		}
		again, _ := planSoakFaults(tc.duration, 42)
		for i := range plan {
			if plan[i] != again[i] {
				t.Fatalf("%s: the same seed planned %v, then %v", tc.duration, plan, again)
			}
		}
	}
	a, _ := planSoakFaults(30*time.Minute, 1)
	b, _ := planSoakFaults(30*time.Minute, 2)
	if a[0] == b[0] && a[1] == b[1] {
		t.Errorf("seeds 1 and 2 planned the same faults: %v", a)
	}
	if _, err := planSoakFaults(3*time.Minute, 1); err == nil {
		t.Error("a 3-minute soak was planned; five faults 15 s apart after the baseline minute and before the quiet end do not fit")
	}
}

// samplesOf samples f every 10 s over 30 minutes.
func samplesOf(f func(min float64) float64) ([]time.Duration, []float64) {
	var ats []time.Duration
	var vs []float64
	for at := soakSampleEvery; at <= 30*time.Minute; at += soakSampleEvery {
		ats = append(ats, at)
		vs = append(vs, f(at.Minutes()))
	}
	return ats, vs
}

func TestSoakGrowthVerdict(t *testing.T) {
	rss := soakSeriesFor(100)[serAPIRSS]
	none := func(time.Duration) bool { return false }
	// A steady jitter of ±3 MB, the same in every run.
	jitter := func(m float64) float64 { return 3 * math.Sin(m*7.3) }
	for _, tc := range []struct {
		name     string
		f        func(m float64) float64
		excluded func(time.Duration) bool
		grows    bool
	}{
		{"steady", func(m float64) float64 { return 60 + jitter(m) }, none, false},
		{"a leak of 2 MB a minute", func(m float64) float64 { return 60 + 2*m + jitter(m) }, none, true},
		{"filled in the first five minutes, then level", func(m float64) float64 { return 30 + 30*min(m, 5)/5 + jitter(m) }, none, false},
		// A level that rose once (a cache filled at minute 12) and then
		// held: above the limit, but bounded.
		{"stepped up once, then level", func(m float64) float64 {
			if m >= 12 {
				return 90 + jitter(m)
			}
			return 60 + jitter(m)
		}, none, false},
		// Killed at minute 24: a fresh process, back to its steady size
		// in two minutes; the last half's line rises, the maximum does not.
		{"restarted in the last third", func(m float64) float64 {
			if m >= 24 && m < 26 {
				return 25 + 35*(m-24)/2
			}
			return 60 + jitter(m)
		}, none, false},
		// Retries piling up in a fault's window: left out.
		{"a spike in a fault's window", func(m float64) float64 {
			if m > 25 && m < 26 {
				return 400
			}
			return 60 + 2*max(0, m-25) + jitter(m)
		}, func(at time.Duration) bool { return at > 25*time.Minute && at < 26*time.Minute }, false},
	} {
		ats, vs := samplesOf(tc.f)
		v := judgeGrowth(rss, ats, vs, tc.excluded, 30*time.Minute)
		if !v.judged {
			t.Errorf("%s: not judged: %s", tc.name, v.why)
			continue
		}
		if v.grows != tc.grows {
			t.Errorf("%s: grows=%v, want %v (first third's max %.1f, last third's %.1f, limit %.1f, last half's rise %.1f)",
				tc.name, v.grows, tc.grows, v.firstMax, v.lastMax, v.limit, v.rise)
		}
	}

	// Redis fills for the tasks' 10 minutes of retention: a 4-minute soak
	// cannot tell that from a leak, and does not judge it.
	redisMB := soakSeriesFor(100)[serRedisMB]
	ats, vs := samplesOf(func(m float64) float64 { return 1 + m })
	if v := judgeGrowth(redisMB, ats[:24], vs[:24], none, 4*time.Minute); v.judged {
		t.Errorf("Redis judged on a 4-minute soak: %+v", v)
	}
	// Over 30 minutes it is judged from minute 10: a fill that levels off
	// there passes, one that goes on fails.
	ats, vs = samplesOf(func(m float64) float64 { return 1 + 5*min(m, 10) })
	if v := judgeGrowth(redisMB, ats, vs, none, 30*time.Minute); !v.judged || v.grows {
		t.Errorf("Redis filling for 10 minutes, then level: %+v", v)
	}
	ats, vs = samplesOf(func(m float64) float64 { return 1 + 5*m })
	if v := judgeGrowth(redisMB, ats, vs, none, 30*time.Minute); !v.judged || !v.grows {
		t.Errorf("Redis growing for 30 minutes: %+v", v)
	}

	// Faults everywhere: too few samples to judge, never a pass.
	ats, vs = samplesOf(func(m float64) float64 { return 60 + 10*m })
	if v := judgeGrowth(rss, ats, vs, func(at time.Duration) bool { return at > 5*time.Minute }, 30*time.Minute); v.judged {
		t.Errorf("judged with every sample after minute 5 in a fault's window: %+v", v)
	}
}

func TestSoakP99Verdict(t *testing.T) {
	var lat []time.Duration
	for i := 1; i <= 100; i++ {
		lat = append(lat, time.Duration(i)*time.Millisecond)
	}
	if p := percentile(lat, 0.99); p != 99*time.Millisecond {
		t.Errorf("p99 of 1..100 ms: %s", p)
	}
	m := func(minute int, p99ms int, excluded string) minuteP99 {
		return minuteP99{minute: minute, n: 600, p99: time.Duration(p99ms) * time.Millisecond, excluded: excluded}
	}
	baseline, judged, over := judgeP99([]minuteP99{m(1, 20, ""), m(2, 39, ""), m(3, 90, "api-kill"), m(4, 41, ""), {minute: 5, n: 10, p99: time.Second}})
	if baseline != 20*time.Millisecond || judged != 2 {
		t.Errorf("baseline %s over %d minutes judged, want minute 1's 20ms, and minutes 2 and 4 judged", baseline, judged)
	}
	if len(over) != 1 || over[0].minute != 4 {
		t.Errorf("minutes over twice the baseline: %+v; want minute 4 alone (3 is a fault's, 5 has 10 creates)", over)
	}
	if baseline, _, _ := judgeP99([]minuteP99{{minute: 1, n: 10, p99: time.Millisecond}, m(2, 50, "")}); baseline != 0 {
		t.Errorf("a first minute of 10 creates made a baseline of %s", baseline)
	}
}

func TestSoakPlot(t *testing.T) {
	xs := []float64{1.0 / 6, 2.0 / 6, 3.0 / 6, 4.0 / 6, 5.0 / 6, 1}
	nan := math.NaN()
	panels := []plotSeries{
		{title: "rising", ys: []float64{1, 2, 3, 4, 5, 6}},
		{title: "with a gap", ys: []float64{5, nan, 5, 5, nan, 5}},
		{title: "never read", ys: []float64{nan, nan, nan, nan, nan, nan}},
	}
	path := filepath.Join(t.TempDir(), "soak.png")
	if err := plotSoak(path, "test", xs, panels, [][2]float64{{0.4, 0.6}}); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("the plot is not a PNG: %v", err)
	}
	if want := image.Rect(0, 0, plotCols*plotPanelW, plotHeader+2*plotPanelH); img.Bounds() != want {
		t.Fatalf("plot of 3 panels is %v, want %v (2 columns, 2 rows)", img.Bounds(), want)
	}
	count := func(panel int, c any) int {
		x0, y0 := (panel%plotCols)*plotPanelW, plotHeader+(panel/plotCols)*plotPanelH
		n := 0
		for y := y0; y < y0+plotPanelH; y++ {
			for x := x0; x < x0+plotPanelW; x++ {
				if img.At(x, y) == c {
					n++
				}
			}
		}
		return n
	}
	for i, want := range []bool{true, true, false} {
		if got := count(i, plotLine) > 0; got != want {
			t.Errorf("panel %q has a line: %v, want %v", panels[i].title, got, want)
		}
		if count(i, plotShade) == 0 {
			t.Errorf("panel %q shades no fault", panels[i].title)
		}
	}
}
