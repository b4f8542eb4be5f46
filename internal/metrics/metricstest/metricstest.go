// Package metricstest reads the service's metrics in tests of the packages
// that record them.
package metricstest

import (
	"testing"

	"github.com/payoutd/payoutd/internal/metrics"
)

// Value returns the value of the counter or gauge series name{labels} in
// m's registry (a histogram's sample count), 0 when there is none yet.
// labels are name, value pairs and must name every label of the series.
func Value(t testing.TB, m *metrics.Metrics, name string, labels ...string) float64 {
	t.Helper()
	if len(labels)%2 != 0 {
		t.Fatalf("metricstest.Value(%s): labels must be name, value pairs", name)
	}
	families, err := m.Registry().Gather()
	if err != nil {
		t.Fatalf("gather metrics: %v", err)
	}
	want := map[string]string{}
	for i := 0; i < len(labels); i += 2 {
		want[labels[i]] = labels[i+1]
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, s := range f.GetMetric() {
			got := map[string]string{}
			for _, l := range s.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			if !sameLabels(got, want) {
				continue
			}
			switch {
			case s.Counter != nil:
				return s.GetCounter().GetValue()
			case s.Gauge != nil:
				return s.GetGauge().GetValue()
			case s.Histogram != nil:
				return float64(s.GetHistogram().GetSampleCount())
			}
		}
	}
	return 0
}

func sameLabels(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
