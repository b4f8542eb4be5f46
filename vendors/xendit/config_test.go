package xendit

import (
	"strings"
	"testing"

	"github.com/payoutd/payoutd/models"
)

// load is LoadConfig on env from DefaultConfig, under its APP_ENV
// (production when unset, as the service's default).
func load(env map[string]string) (Config, error) {
	appEnv := models.Production
	if v := env["APP_ENV"]; v != "" {
		var err error
		if appEnv, err = models.ParseEnvironment(v); err != nil {
			return Config{}, err
		}
	}
	return LoadConfig(func(k string) string { return env[k] }, appEnv, DefaultConfig())
}

// XENDIT_*: the callback token is required with the key and differs from
// it, and no message shows a secret. (Which key and URL each environment
// takes: TestVendorURLRules.)
func TestXenditSettings(t *testing.T) {
	key, tok := "xnd_development_SECRETKEY", "CALLBACKTOKEN"
	for _, tt := range []struct {
		env     map[string]string
		wantErr string
		wantURL string
	}{
		{map[string]string{}, "", "https://api.xendit.co"},
		{map[string]string{"XENDIT_SECRET_KEY": key, "XENDIT_CALLBACK_TOKEN": tok}, "", "https://api.xendit.co"},
		{map[string]string{"XENDIT_SECRET_KEY": key, "XENDIT_CALLBACK_TOKEN": tok, "XENDIT_BASE_URL": "http://127.0.0.1:8090"}, "", "http://127.0.0.1:8090"},
		{map[string]string{"XENDIT_SECRET_KEY": key, "XENDIT_CALLBACK_TOKEN": tok, "XENDIT_BASE_URL": "http://localhost:8090"}, "", "http://localhost:8090"},
		{map[string]string{"XENDIT_SECRET_KEY": key, "XENDIT_CALLBACK_TOKEN": tok, "XENDIT_BASE_URL": "http://vendorsim:8090"}, "", "http://vendorsim:8090"},
		{map[string]string{"XENDIT_SECRET_KEY": key}, "XENDIT_CALLBACK_TOKEN is required with XENDIT_SECRET_KEY", ""},
		{map[string]string{"XENDIT_CALLBACK_TOKEN": tok}, "XENDIT_CALLBACK_TOKEN is set without XENDIT_SECRET_KEY", ""},
		{map[string]string{"XENDIT_SECRET_KEY": key, "XENDIT_CALLBACK_TOKEN": key}, "XENDIT_CALLBACK_TOKEN and XENDIT_SECRET_KEY must differ", ""},
		{map[string]string{"XENDIT_SECRET_KEY": key, "XENDIT_CALLBACK_TOKEN": tok, "XENDIT_BASE_URL": "http://api.xendit.co"}, "plain http only to a loopback address", ""},
		{map[string]string{"XENDIT_SECRET_KEY": key, "XENDIT_CALLBACK_TOKEN": tok, "XENDIT_BASE_URL": "api.xendit.co"}, "want an absolute https URL", ""},
	} {
		tt.env["APP_ENV"] = "staging" // a test-mode key
		c, err := load(tt.env)
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("%v: %v", tt.env, err)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("%v: error %v, want one containing %q", tt.env, err, tt.wantErr)
		case err == nil && c.BaseURL != tt.wantURL:
			t.Errorf("%v: base URL %q, want %q", tt.env, c.BaseURL, tt.wantURL)
		}
		if err != nil && (strings.Contains(err.Error(), key) || strings.Contains(err.Error(), tok)) {
			t.Errorf("%v: the message shows a secret: %v", tt.env, err)
		}
	}
}

// Staging refuses a live Xendit key, production a test-mode one; the
// message says why and what to do, and never shows the key.
func TestXenditKeyPerEnvironment(t *testing.T) {
	for _, tt := range []struct {
		env, key string
		wantErr  []string // nil for accepted
	}{
		{"staging", "xnd_development_SECRET1", nil},
		{"staging", "xnd_production_SECRET1", []string{"XENDIT_SECRET_KEY is a live key", "APP_ENV=staging", "use a test-mode key"}},
		{"staging", "XND_PRODUCTION_SECRET1", []string{"XENDIT_SECRET_KEY is a live key"}},
		{"production", "xnd_production_SECRET1", nil},
		{"production", "xnd_development_SECRET1", []string{"XENDIT_SECRET_KEY is a test-mode key", "APP_ENV=production", "use the live key"}},
	} {
		env := map[string]string{"APP_ENV": tt.env, "XENDIT_SECRET_KEY": tt.key, "XENDIT_CALLBACK_TOKEN": "T"}
		_, err := load(env)
		if tt.wantErr == nil {
			if err != nil {
				t.Errorf("APP_ENV=%s with %s: %v", tt.env, tt.key, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("APP_ENV=%s with %s: accepted", tt.env, tt.key)
			continue
		}
		for _, want := range tt.wantErr {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("APP_ENV=%s with %s: %v, want it to say %q", tt.env, tt.key, err, want)
			}
		}
		if strings.Contains(err.Error(), "SECRET1") {
			t.Errorf("the message shows the key: %v", err)
		}
	}
}
