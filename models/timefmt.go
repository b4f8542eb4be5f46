package models

import "time"

// FormatTime is the one form of every timestamp the service shows (API
// answers, webhooks, operator output): RFC 3339 in UTC with a Z.
func FormatTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// FormatTimePtr is FormatTime for an optional time: nil stays nil (null).
func FormatTimePtr(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := FormatTime(*t)
	return &s
}
