package main

import (
	"strings"
	"testing"

	"github.com/payoutd/payoutd/models"
)

// dev runs staging's rules whatever APP_ENV says: a live Xendit key in the
// environment stops it (it would pay out real money from a laptop), a
// test-mode one is taken even beside APP_ENV=production, and
// --vendors=simulated-xendit sets the environment's XENDIT_* aside
// unread, as the banner promises.
func TestDevConfigStagingRules(t *testing.T) {
	load := func(env map[string]string, mask func(func(string) string) func(string) string) error {
		getenv := func(k string) string { return env[k] }
		if mask != nil {
			getenv = mask(getenv)
		}
		cfg, err := devConfig(getenv)
		if err == nil && cfg.Env != models.Staging {
			t.Errorf("%v: dev runs %s", env, cfg.Env)
		}
		return err
	}
	live := map[string]string{"XENDIT_SECRET_KEY": "xnd_production_SECRET1", "XENDIT_CALLBACK_TOKEN": "token-1"}
	err := load(live, nil)
	if err == nil || !strings.Contains(err.Error(), "XENDIT_SECRET_KEY is a live key") || strings.Contains(err.Error(), "SECRET1") {
		t.Errorf("a live key in dev's environment: %v, want it refused without showing it", err)
	}
	if err := load(live, maskXenditEnv); err != nil {
		t.Errorf("simulated-xendit with a live key in the environment: %v, want it set aside", err)
	}
	test := map[string]string{"APP_ENV": "production", "XENDIT_SECRET_KEY": "xnd_development_SECRET1", "XENDIT_CALLBACK_TOKEN": "token-1"}
	if err := load(test, nil); err != nil {
		t.Errorf("a test-mode key beside APP_ENV=production: %v, want staging's rules", err)
	}
}
