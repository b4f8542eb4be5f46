package signature

import (
	"strings"
	"testing"
	"time"
)

func TestSecondsHint(t *testing.T) {
	now := time.UnixMilli(1795860000123)
	for _, tc := range []struct {
		name string
		t    int64
		hint bool
	}{
		{"seconds of now", now.Unix(), true},
		{"seconds of an hour ago", now.Add(-time.Hour).Unix(), true},
		{"seconds of two days ago", now.Add(-48 * time.Hour).Unix(), false},
		{"milliseconds of an hour ago", now.Add(-time.Hour).UnixMilli(), false},
		{"zero", 0, false},
		{"negative", -now.Unix(), false},
		{"too large to scale", 1 << 62, false},
	} {
		got := SecondsHint(tc.t, now)
		if (got != "") != tc.hint {
			t.Errorf("%s: SecondsHint(%d) = %q, want a hint: %v", tc.name, tc.t, got, tc.hint)
		}
		if tc.hint && !strings.Contains(got, "Unix milliseconds") {
			t.Errorf("%s: hint %q does not say what unit to send", tc.name, got)
		}
	}
}
