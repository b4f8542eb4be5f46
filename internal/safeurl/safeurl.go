// Package safeurl is the one form in which payoutd prints a URL value (a
// setting, a webhook URL, a callback URL) in an error, a log line or an
// answer: never its userinfo, where a key may sit as the basic-auth user
// name (https://xnd_production_…:@host), and never its path, query or
// fragment, where tokens are put too.
package safeurl

import "net/url"

// Hidden stands for what is not shown.
const Hidden = "xxxxx"

// Display is raw fit to print: scheme and host, "xxxxx@" where the URL
// carries userinfo, and "/…" for any path, query or fragment. A value that
// is not an absolute URL with a host may be anything, a bare secret
// included, so none of it is shown: "xxxxx". An empty value stays "".
func Display(raw string) string {
	if raw == "" {
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return Hidden
	}
	out := u.Scheme + "://"
	if u.User != nil {
		out += Hidden + "@"
	}
	out += u.Host
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.ForceQuery {
		return out + "/…"
	}
	return out + u.Path
}

// Setting names a URL-valued setting and its value for a message:
// NAME=<Display of raw>, or NAME alone when raw is not an absolute URL
// (nothing of it is then shown; the message says what shape is wanted).
func Setting(name, raw string) string {
	if d := Display(raw); d != Hidden {
		return name + "=" + d
	}
	return name + " (its value not shown: not an absolute URL)"
}
