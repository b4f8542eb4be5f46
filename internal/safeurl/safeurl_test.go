package safeurl

import (
	"strings"
	"testing"
)

// No secret a URL value may carry survives Display or Setting: neither
// userinfo, nor path, query or fragment, nor anything of a value that
// does not parse.
func TestDisplay(t *testing.T) {
	for in, want := range map[string]string{
		"":                       "",
		"https://api.xendit.co":  "https://api.xendit.co",
		"https://api.xendit.co/": "https://api.xendit.co/",
		"https://xnd_production_TOPSECRET:@api.xendit.co":   "https://xxxxx@api.xendit.co",
		"http://xnd_production_TOPSECRET@127.0.0.1:8090/v2": "http://xxxxx@127.0.0.1:8090/…",
		"https://ops:TOPSECRET@prom.example:9090/?t=1":      "https://xxxxx@prom.example:9090/…",
		"https://bank.example/snap?key=TOPSECRET":           "https://bank.example/…",
		"https://bank.example#TOPSECRET":                    "https://bank.example/…",
		"xnd_production_TOPSECRET":                          "xxxxx",
		"xnd_production_TOPSECRET:@api.xendit.co":           "xxxxx",
		"https://user:TOP/SECRET@api.xendit.co":             "xxxxx",
		"https://user:TOP@SECRET@api.xendit.co":             "https://xxxxx@api.xendit.co",
		"https://TOPSECRET:@api.xendit.co\n":                "xxxxx",
		"api.xendit.co/TOPSECRET":                           "xxxxx",
		"::TOPSECRET":                                       "xxxxx",
	} {
		got := Display(in)
		if got != want {
			t.Errorf("Display(%q) = %q, want %q", in, got, want)
		}
		if s := Setting("XENDIT_BASE_URL", in); strings.Contains(s, "TOPSECRET") || !strings.HasPrefix(s, "XENDIT_BASE_URL") {
			t.Errorf("Setting of %q = %q", in, s)
		}
	}
	if got := Setting("PROMETHEUS_URL", "prometheus:9090"); got != "PROMETHEUS_URL (its value not shown: not an absolute URL)" {
		t.Errorf("Setting of a relative value: %q", got)
	}
	if got := Setting("XENDIT_BASE_URL", "http://user:pw@xenditsim:8090/v2"); got != "XENDIT_BASE_URL=http://xxxxx@xenditsim:8090/…" {
		t.Errorf("Setting: %q", got)
	}
}
