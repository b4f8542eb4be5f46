package webhooks

import (
	"regexp"

	"github.com/payoutd/payoutd/internal/safeurl"
)

// userinfo matches the user:password@ part of a URL, also inside an error
// message (net/http's own errors keep the user name).
var userinfo = regexp.MustCompile(`(?i)\b([a-z][a-z0-9+.-]*://)[^/?#@\s"]*@`)

// Redact hides the credentials a merchant may have put in a webhook URL
// (https://user:pass@host/…) wherever the URL appears in text: in attempts
// shown to operators, in errors and in logs.
func Redact(s string) string {
	return userinfo.ReplaceAllString(s, "${1}xxxxx@")
}

// DisplayURL is the only form of a webhook URL kept in plain text (in the
// clients table, attempts, answers to operators and logs): scheme and host,
// "xxxxx@" where the URL carries credentials, and "/…" for any path, query
// or fragment, since merchants put tokens there too (safeurl.Display).
func DisplayURL(raw string) string { return safeurl.Display(raw) }

// anyURL matches a URL inside an error message, up to a quote or a space.
var anyURL = regexp.MustCompile(`(?i)\b[a-z][a-z0-9+.-]*://[^\s"]+`)

// scrub reduces every URL quoted in text (net/http quotes the whole URL,
// the password starred, path and query kept) to its display form.
func scrub(text string) string {
	return Redact(anyURL.ReplaceAllStringFunc(text, DisplayURL))
}
