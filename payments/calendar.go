package payments

import (
	"time"
	_ "time/tzdata" // Asia/Jakarta on hosts (and distroless images) without a zone database
)

// Jakarta is the settlement calendar's zone.
var Jakarta = mustLoad("Asia/Jakarta")

func mustLoad(name string) *time.Location {
	loc, err := time.LoadLocation(name)
	if err != nil {
		panic(err)
	}
	return loc
}

// Calendar decides when a paid payment settles: at the start (00:00 in
// Asia/Jakarta) of the next business day after it was paid, skipping
// weekends and holidays; or, when Delay is set (dev, tests), Delay after
// it was paid.
type Calendar struct {
	Holidays map[string]bool // "2026-12-25"
	Delay    time.Duration
}

// SettleAt returns when a payment paid at paidAt settles.
func (c Calendar) SettleAt(paidAt time.Time) time.Time {
	if c.Delay > 0 {
		return paidAt.Add(c.Delay)
	}
	day := paidAt.In(Jakarta)
	day = time.Date(day.Year(), day.Month(), day.Day(), 0, 0, 0, 0, Jakarta)
	for {
		day = day.AddDate(0, 0, 1)
		if c.BusinessDay(day) {
			return day.UTC()
		}
	}
}

// BusinessDay reports whether day (its date in Asia/Jakarta) is neither a
// weekend nor a holiday.
func (c Calendar) BusinessDay(day time.Time) bool {
	day = day.In(Jakarta)
	if day.Weekday() == time.Saturday || day.Weekday() == time.Sunday {
		return false
	}
	return !c.Holidays[day.Format(time.DateOnly)]
}
