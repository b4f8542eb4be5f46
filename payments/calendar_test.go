package payments

import (
	"testing"
	"time"
)

func jkt(s string) time.Time {
	t, err := time.ParseInLocation("2006-01-02 15:04", s, Jakarta)
	if err != nil {
		panic(err)
	}
	return t
}

// Settlement lands at 00:00 Asia/Jakarta of the next business day.
func TestCalendarNextBusinessDay(t *testing.T) {
	t.Parallel()
	c := Calendar{Holidays: map[string]bool{"2026-12-25": true, "2027-01-01": true}}
	tests := []struct {
		name, paid, want string
	}{
		{"Monday → Tuesday", "2026-11-23 10:00", "2026-11-24 00:00"},
		{"Thursday late evening → Friday", "2026-11-26 23:59", "2026-11-27 00:00"},
		{"Friday → Monday", "2026-11-27 09:00", "2026-11-30 00:00"},
		{"Saturday → Monday", "2026-11-28 12:00", "2026-11-30 00:00"},
		{"Sunday → Monday", "2026-11-29 23:30", "2026-11-30 00:00"},
		{"the day before a holiday skips it", "2026-12-24 15:00", "2026-12-28 00:00"},
		{"holiday on a Friday, then the weekend", "2026-12-31 08:00", "2027-01-04 00:00"},
		{"paid on a holiday", "2026-12-25 11:00", "2026-12-28 00:00"},
	}
	for _, tt := range tests {
		got := c.SettleAt(jkt(tt.paid))
		if want := jkt(tt.want); !got.Equal(want) {
			t.Errorf("%s: paid %s settles %s, want %s", tt.name, tt.paid, got.In(Jakarta).Format("Mon 2006-01-02 15:04"), want.Format("Mon 2006-01-02 15:04"))
		}
	}
}

// The date counts in Jakarta, not in UTC: Thursday 20:00 UTC is Friday
// 03:00 in Jakarta (settles Monday, not Friday), and Sunday 18:00 UTC is
// Monday 01:00 in Jakarta (settles Tuesday, not Monday).
func TestCalendarUsesJakartaDates(t *testing.T) {
	t.Parallel()
	c := Calendar{}
	thursdayEveningUTC := time.Date(2026, 11, 26, 20, 0, 0, 0, time.UTC) // Friday 03:00 WIB
	if got, want := c.SettleAt(thursdayEveningUTC), jkt("2026-11-30 00:00"); !got.Equal(want) {
		t.Fatalf("Thursday 20:00 UTC settles %s, want Monday", got.In(Jakarta))
	}
	mondayMorningWIB := time.Date(2026, 11, 22, 18, 0, 0, 0, time.UTC) // Monday 01:00 WIB
	if got, want := c.SettleAt(mondayMorningWIB), jkt("2026-11-24 00:00"); !got.Equal(want) {
		t.Fatalf("Sunday 18:00 UTC (Monday in Jakarta) settles %s, want Tuesday", got.In(Jakarta))
	}
}

func TestCalendarDelayOverrides(t *testing.T) {
	t.Parallel()
	paid := jkt("2026-11-27 09:00")
	if got := (Calendar{Delay: 5 * time.Second}).SettleAt(paid); !got.Equal(paid.Add(5 * time.Second)) {
		t.Fatalf("with SETTLEMENT_DELAY=5s: %s", got)
	}
}
