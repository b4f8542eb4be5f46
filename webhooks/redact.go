package webhooks

import "regexp"

// userinfo matches the user:password@ part of a URL, also inside an error
// message (net/http's own errors keep the user name).
var userinfo = regexp.MustCompile(`(?i)\b([a-z][a-z0-9+.-]*://)[^/?#@\s"]*@`)

// Redact hides the credentials a merchant may have put in a webhook URL
// (https://user:pass@host/…) wherever the URL appears in text: in attempts
// shown to operators, in errors and in logs.
func Redact(s string) string {
	return userinfo.ReplaceAllString(s, "${1}xxxxx@")
}
