package webhooks

import (
	"net/netip"
	"strings"
	"testing"
	"time"
)

// Unconfigured, an attempt may take 10 s and retries span 72 hours, as
// docs/design.md (Webhooks) promises merchants.
func TestDefaults(t *testing.T) {
	t.Parallel()
	d := New(Options{})
	if d.Timeout() != 10*time.Second || d.client.Timeout != 10*time.Second {
		t.Fatalf("attempt timeout %s (HTTP client %s), want 10s", d.Timeout(), d.client.Timeout)
	}
	if s := d.Schedule(); s.Base != 30*time.Second || s.Cap != 6*time.Hour || s.Window != 72*time.Hour {
		t.Fatalf("schedule %+v, want 30s doubling to 6h over 72h", s)
	}
}

// The guard's refusal names the address, and for a NAT64 or 6to4 address
// the IPv4 address it leads to; it never reads like a refused connection.
func TestGuardRefusalMessages(t *testing.T) {
	t.Parallel()
	for ip, want := range map[string]string{
		"127.0.0.1":       "webhook destination refused: 127.0.0.1 is a loopback, link-local, private or reserved address",
		"198.18.0.1":      "webhook destination refused: 198.18.0.1 is a loopback, link-local, private or reserved address",
		"64:ff9b::a00:1":  "webhook destination refused: 64:ff9b::a00:1 carries 10.0.0.1, a loopback, link-local, private or reserved address",
		"2002:7f00:1::1":  "webhook destination refused: 2002:7f00:1::1 carries 127.0.0.1, a loopback, link-local, private or reserved address",
		"::ffff:10.0.0.1": "webhook destination refused: 10.0.0.1 is a loopback, link-local, private or reserved address",
	} {
		err := ProductionGuard(nil).CheckAddr(netip.MustParseAddr(ip))
		if err == nil || err.Error() != want {
			t.Errorf("%s: %v, want %q", ip, err, want)
		}
	}
}

// Credentials in a merchant's URL never reach what operators read.
func TestRedact(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"https://ops:s3cret@merchant.example/hooks":             "https://xxxxx@merchant.example/hooks",
		"https://token@merchant.example/hooks?a=b@c":            "https://xxxxx@merchant.example/hooks?a=b@c",
		"https://merchant.example/a@b":                          "https://merchant.example/a@b",
		"https://merchant.example/hooks":                        "https://merchant.example/hooks",
		`Post "https://ops:***@merchant.example/x": EOF`:        `Post "https://xxxxx@merchant.example/x": EOF`,
		`Post "HTTP://ops:p%40ss@10.0.0.1:8443/x": dial failed`: `Post "HTTP://xxxxx@10.0.0.1:8443/x": dial failed`,
	} {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
		if strings.Contains(Redact(in), "s3cret") {
			t.Errorf("Redact(%q) kept the password", in)
		}
	}
}

// The display form of a webhook URL, the only one kept in plain text, has
// no credentials, path or query.
func TestDisplayURL(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"":                                        "",
		"https://merchant.example":                "https://merchant.example",
		"https://merchant.example/":               "https://merchant.example/",
		"https://merchant.example/hooks":          "https://merchant.example/…",
		"https://merchant.example:8443/?t=abc":    "https://merchant.example:8443/…",
		"https://ops:s3cret@merchant.example/x/y": "https://xxxxx@merchant.example/…",
		"https://token@merchant.example#frag":     "https://xxxxx@merchant.example/…",
		"https://xxxxx@merchant.example/…":        "https://xxxxx@merchant.example/…",
		"::not a url":                             "xxxxx",
	} {
		if got := DisplayURL(in); got != want {
			t.Errorf("DisplayURL(%q) = %q, want %q", in, got, want)
		}
	}
	if got := scrub(`Post "http://ops:***@10.0.0.1:8443/hooks/T0KEN?sig=abc": dial tcp 10.0.0.1:8443: refused`); got != `Post "http://xxxxx@10.0.0.1:8443/…": dial tcp 10.0.0.1:8443: refused` {
		t.Errorf("scrub: %q", got)
	}
}
