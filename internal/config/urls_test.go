package config

import (
	"strings"
	"testing"
)

// Which vendor URLs each environment takes. Production: https, or plain
// http to loopback only, and never a simulator behind a real rail's
// setting. Staging: https, or plain http to loopback or to a simulator's
// one-label service name; a dotted name that merely starts with a
// simulator's letters is anybody's host. Staging reaches a SNAP bank
// through a simulator or loopback only.
func TestVendorURLRules(t *testing.T) {
	keys := snapKeys(t)
	type row struct {
		env, url string
		wantErr  string // "" for accepted
	}
	const (
		httpsOnly   = "APP_ENV=production sends"
		plainHTTP   = "plain http only to a loopback address"
		simInProd   = "APP_ENV=production refuses a simulator"
		userinfo    = "a user name or password in the URL is refused"
		notAbsolute = "want an absolute https URL"
		snapStaging = "APP_ENV=staging reaches SNAP banks through a simulator only"
	)
	// Both real rails' URL settings share these.
	rail := []row{
		{"production", "https://api.provider.example", ""},
		{"production", "https://api.provider.example:8443/v2/", ""},
		{"production", "http://127.0.0.1:8090", ""},
		{"production", "http://127.8.9.10:8090", ""},
		{"production", "http://[::1]:8090", ""},
		{"production", "http://localhost:8090", ""},
		{"production", "http://LOCALHOST:8090", ""},
		{"production", "http://api.provider.example", httpsOnly},
		{"production", "http://10.0.0.7:8090", httpsOnly},
		{"production", "http://localhost.example.com", httpsOnly},
		{"production", "http://127.0.0.1.nip.io", httpsOnly},
		{"production", "http://vendorsim:8090", httpsOnly},
		{"production", "http://snapsim.example.com", httpsOnly},
		{"production", "https://xenditsim:8090", simInProd},
		{"production", "https://snapsim-bca", simInProd},
		{"production", "https://vendorsim2:8090", simInProd},
		{"production", "https://user@api.provider.example", userinfo},
		{"production", "api.provider.example", notAbsolute},
		{"production", "ftp://api.provider.example", notAbsolute},
		{"staging", "http://127.0.0.1:8090", ""},
		{"staging", "http://[::1]:8090", ""},
		{"staging", "http://localhost:8090", ""},
		{"staging", "http://vendorsim:8090", ""},
		{"staging", "http://xenditsim:8090", ""},
		{"staging", "http://snapsim:8091", ""},
		{"staging", "http://SnapSim:8091", ""},
		{"staging", "http://vendorsim2:8090", ""},
		{"staging", "http://snapsim-bca:8091", ""},
		{"staging", "https://xenditsim:8090", ""},
		{"staging", "http://snapsim.example.com", plainHTTP},
		{"staging", "http://vendorsim.internal:8090", plainHTTP},
		{"staging", "http://xenditsim.provider.example", plainHTTP},
		{"staging", "http://xenditsimulator", plainHTTP},
		{"staging", "http://vendorsim_2", plainHTTP},
		{"staging", "http://api.provider.example", plainHTTP},
		{"staging", "http://10.0.0.7:8090", plainHTTP},
		{"staging", "http://user:pw@127.0.0.1:8090", userinfo},
	}
	xenditRows := append([]row{
		{"staging", "https://api.xendit.co", ""}, // Xendit's test mode is the same API
	}, rail...)
	snapRows := append([]row{
		{"staging", "https://api.bank.example", snapStaging},
		{"staging", "https://snap.bca.example.com", snapStaging},
		{"staging", "https://snapsim.example.com", snapStaging},
	}, rail...)
	vendorSimRows := []row{
		{"staging", "http://vendorsim:8090", ""},
		{"staging", "http://127.0.0.1:8090", ""},
		{"staging", "http://vendorsim.example.com:8090", plainHTTP},
		{"staging", "http://tok@vendorsim:8090", userinfo},
		{"production", "http://127.0.0.1:8090", ""},
		{"production", "http://vendorsim:8090", httpsOnly},
		{"production", "http://vendorsim.example.com:8090", httpsOnly},
	}

	check := func(setting string, r row, env map[string]string) {
		t.Helper()
		env["APP_ENV"] = r.env
		_, err := Load(func(k string) string { return env[k] }, Defaults())
		switch {
		case r.wantErr == "" && err != nil:
			t.Errorf("APP_ENV=%s %s=%s: %v", r.env, setting, r.url, err)
		case r.wantErr != "" && (err == nil || !strings.Contains(err.Error(), r.wantErr) || !strings.Contains(err.Error(), setting)):
			t.Errorf("APP_ENV=%s %s=%s: error %v, want one naming %s and containing %q", r.env, setting, r.url, err, setting, r.wantErr)
		}
	}
	for _, r := range xenditRows {
		key := "xnd_development_K" // each environment's own kind of key
		if r.env == "production" {
			key = "xnd_production_K"
		}
		check("XENDIT_BASE_URL", r, map[string]string{"XENDIT_SECRET_KEY": key, "XENDIT_CALLBACK_TOKEN": "T", "XENDIT_BASE_URL": r.url})
	}
	for _, r := range snapRows {
		env := snapEnv(keys)
		env["SNAP_BCA_BASE_URL"] = r.url
		check("SNAP_BCA_BASE_URL", r, env)
	}
	for _, r := range vendorSimRows {
		check("VENDORSIM_URL", r, map[string]string{"VENDORSIM_URL": r.url, "VENDORSIM_TOKEN": "t", "VENDORSIM_CALLBACK_SECRET": "c"})
	}
}

// No URL setting's error shows a secret the value carries: userinfo
// (a key as the basic-auth user name), a path or query token, or any of a
// value that does not even parse. Each message still names the setting.
func TestURLSettingErrorsShowNoSecret(t *testing.T) {
	keys := snapKeys(t)
	values := []string{
		"https://xnd_production_TOPSECRET:@api.xendit.co",
		"http://xnd_production_TOPSECRET:@snapsim.example.com",
		"ftp://ops:TOPSECRET@host.example/x",
		"http://host.example/TOPSECRET?key=TOPSECRET",
		"xnd_production_TOPSECRET:@api.xendit.co",
		"https://user:TOP/SECRET@api.xendit.co",
		"TOPSECRET",
	}
	for _, setting := range []string{"XENDIT_BASE_URL", "SNAP_BCA_BASE_URL", "VENDORSIM_URL", "PROMETHEUS_URL", "PUBLIC_BASE_URL"} {
		for _, envName := range []string{"production", "staging"} {
			for _, v := range values {
				var env map[string]string
				switch setting {
				case "XENDIT_BASE_URL":
					env = map[string]string{"XENDIT_SECRET_KEY": "k", "XENDIT_CALLBACK_TOKEN": "t"}
				case "SNAP_BCA_BASE_URL":
					env = snapEnv(keys)
				case "VENDORSIM_URL":
					env = map[string]string{"VENDORSIM_TOKEN": "t", "VENDORSIM_CALLBACK_SECRET": "c"}
				default:
					env = map[string]string{}
				}
				env["APP_ENV"], env[setting] = envName, v
				_, err := Load(func(k string) string { return env[k] }, Defaults())
				if err == nil {
					// A vendor URL refuses every one of these; the others
					// take any absolute http(s) URL.
					if strings.HasSuffix(setting, "BASE_URL") && setting != "PUBLIC_BASE_URL" || setting == "VENDORSIM_URL" {
						t.Errorf("APP_ENV=%s %s=%s: accepted", envName, setting, v)
					}
					continue
				}
				if msg := err.Error(); strings.Contains(msg, "TOPSECRET") || strings.Contains(msg, "TOP/SECRET") || !strings.Contains(msg, setting) {
					t.Errorf("APP_ENV=%s %s=%s: %s", envName, setting, v, msg)
				}
			}
		}
	}
}
