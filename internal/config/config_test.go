package config

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestMetricsAddr(t *testing.T) {
	for _, tt := range []struct {
		env     map[string]string
		wantErr string // "" for none
	}{
		{map[string]string{}, ""},
		{map[string]string{"METRICS_ADDR": ":9090", "ADMIN_USER": "ops", "ADMIN_PASSWORD": "correct-horse-battery"}, ""},
		{map[string]string{"METRICS_ADDR": "9090", "ADMIN_USER": "ops", "ADMIN_PASSWORD": "correct-horse-battery"}, `METRICS_ADDR="9090": want host:port`},
		{map[string]string{"METRICS_ADDR": ":9090"}, "METRICS_ADDR needs ADMIN_USER and ADMIN_PASSWORD"},
	} {
		c, err := Load(func(k string) string { return tt.env[k] }, Defaults())
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("%v: %v", tt.env, err)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("%v: error %v, want one containing %q", tt.env, err, tt.wantErr)
		case err == nil && c.MetricsAddr != tt.env["METRICS_ADDR"]:
			t.Errorf("%v: MetricsAddr %q", tt.env, c.MetricsAddr)
		}
	}
}

// SETTLEMENT_HOLIDAYS and SETTLEMENT_DELAY make the settlement calendar;
// a malformed value stops the start with a message naming the variable.
func TestSettlementSettings(t *testing.T) {
	for _, tt := range []struct {
		env      map[string]string
		holidays []string
		delay    time.Duration
		wantErr  string // "" for none
	}{
		{env: map[string]string{}},
		{env: map[string]string{"SETTLEMENT_HOLIDAYS": "2026-12-25"}, holidays: []string{"2026-12-25"}},
		{env: map[string]string{"SETTLEMENT_HOLIDAYS": " 2026-12-25 , 2027-01-01, "}, holidays: []string{"2026-12-25", "2027-01-01"}},
		{env: map[string]string{"SETTLEMENT_DELAY": "5s"}, delay: 5 * time.Second},
		{env: map[string]string{"SETTLEMENT_HOLIDAYS": "2026-12-25", "SETTLEMENT_DELAY": "1m"}, holidays: []string{"2026-12-25"}, delay: time.Minute},
		{env: map[string]string{"SETTLEMENT_HOLIDAYS": "2026-13-01"}, wantErr: `SETTLEMENT_HOLIDAYS: holiday "2026-13-01": want a date such as 2026-12-25`},
		{env: map[string]string{"SETTLEMENT_HOLIDAYS": "25/12/2026"}, wantErr: "SETTLEMENT_HOLIDAYS"},
		{env: map[string]string{"SETTLEMENT_HOLIDAYS": "2026-12-25;2027-01-01"}, wantErr: "SETTLEMENT_HOLIDAYS"},
		{env: map[string]string{"SETTLEMENT_DELAY": "-1s"}, wantErr: `SETTLEMENT_DELAY="-1s": want a non-negative Go duration`},
		{env: map[string]string{"SETTLEMENT_DELAY": "2"}, wantErr: "SETTLEMENT_DELAY"},
	} {
		c, err := Load(func(k string) string { return tt.env[k] }, Defaults())
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%v: error %v, want one containing %q", tt.env, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%v: %v", tt.env, err)
			continue
		}
		if len(c.SettlementHolidays) != len(tt.holidays) || c.SettlementDelay != tt.delay {
			t.Errorf("%v: holidays %v and delay %s, want holidays %v and delay %s", tt.env, c.SettlementHolidays, c.SettlementDelay, tt.holidays, tt.delay)
		}
		for _, day := range tt.holidays {
			if !c.SettlementHolidays[day] {
				t.Errorf("%v: %s is not a holiday", tt.env, day)
			}
		}
	}
}

func TestParseHolidaysRefusesBadDates(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"2026-13-01", "25-12-2026", "tomorrow", "2026-12-25,x"} {
		if _, err := parseHolidays(bad); err == nil {
			t.Errorf("parseHolidays(%q) accepted", bad)
		}
	}
}

// The disbursement settings default to the documented values
// (docs/configuration.md) when unset, and
// the environment overrides them (0 turns the create's wait off).
func TestDisbursementSettings(t *testing.T) {
	c, err := Load(func(string) string { return "" }, Defaults())
	if err != nil {
		t.Fatal(err)
	}
	if c.DisbursementLockTTL != 30*time.Minute || c.DisbursementSubmitWait != 5*time.Second || c.SandboxCompleteAfter != 2*time.Second {
		t.Errorf("defaults: lock TTL %s, submit wait %s, sandbox completes after %s; want 30m, 5s, 2s",
			c.DisbursementLockTTL, c.DisbursementSubmitWait, c.SandboxCompleteAfter)
	}
	env := map[string]string{"DISBURSEMENT_LOCK_TTL": "10m", "DISBURSEMENT_SUBMIT_WAIT": "0s", "SANDBOX_COMPLETE_AFTER": "150ms"}
	c, err = Load(func(k string) string { return env[k] }, Defaults())
	if err != nil {
		t.Fatal(err)
	}
	if c.DisbursementLockTTL != 10*time.Minute || c.DisbursementSubmitWait != 0 || c.SandboxCompleteAfter != 150*time.Millisecond {
		t.Errorf("overrides: lock TTL %s, submit wait %s, sandbox completes after %s", c.DisbursementLockTTL, c.DisbursementSubmitWait, c.SandboxCompleteAfter)
	}
}

// ADMIN_PASSWORD guards routes that pause payouts, over basic auth that can
// be guessed online: a server of those routes refuses to start with one
// shorter than 12 characters, and says so without showing it. Unset, the
// routes answer 401 to everyone, as before.
func TestAdminPasswordLength(t *testing.T) {
	for _, tt := range []struct {
		env     map[string]string
		needs   Needs
		wantErr string
	}{
		{map[string]string{"ADMIN_USER": "ops", "ADMIN_PASSWORD": "s3cret"}, Needs{Operators: true}, "ADMIN_PASSWORD is too short (6 characters): at least 12"},
		{map[string]string{"ADMIN_USER": "ops", "ADMIN_PASSWORD": "elevenchars"}, Needs{Operators: true}, "ADMIN_PASSWORD is too short (11 characters)"},
		{map[string]string{"ADMIN_USER": "ops", "ADMIN_PASSWORD": "twelve-chars"}, Needs{Operators: true}, ""},
		{map[string]string{}, Needs{Operators: true}, ""},
		// A subcommand that serves no operators' route (admin, migrate) is
		// not stopped by it.
		{map[string]string{"ADMIN_USER": "ops", "ADMIN_PASSWORD": "s3cret"}, Needs{Database: false}, ""},
		// The worker serving /metrics is.
		{map[string]string{"METRICS_ADDR": ":9090", "ADMIN_USER": "ops", "ADMIN_PASSWORD": "s3cret"}, Needs{}, "ADMIN_PASSWORD is too short"},
	} {
		c, err := Load(func(k string) string { return tt.env[k] }, Defaults())
		if err == nil {
			err = c.Check(tt.needs)
		}
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("%v: %v", tt.env, err)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("%v: error %v, want one containing %q", tt.env, err, tt.wantErr)
		case err != nil && strings.Contains(err.Error(), tt.env["ADMIN_PASSWORD"]):
			t.Errorf("%v: the error shows the password: %v", tt.env, err)
		}
	}
}

// OPS_READ_ONLY is a boolean; anything else stops the start.
func TestOpsReadOnly(t *testing.T) {
	for v, want := range map[string]bool{"": false, "true": true, "1": true, "false": false} {
		c, err := Load(func(k string) string { return map[string]string{"OPS_READ_ONLY": v}[k] }, Defaults())
		if err != nil || c.OpsReadOnly != want {
			t.Errorf("OPS_READ_ONLY=%q: %v, %v; want %v", v, c.OpsReadOnly, err, want)
		}
	}
	if _, err := Load(func(k string) string { return map[string]string{"OPS_READ_ONLY": "yes please"}[k] }, Defaults()); err == nil ||
		!strings.Contains(err.Error(), `OPS_READ_ONLY="yes please": want true or false`) {
		t.Errorf("OPS_READ_ONLY=yes please: %v", err)
	}
}

// REDIS_EVICTION_CHECK is on unless set to skip; anything else stops the
// start rather than pass for one or the other.
func TestRedisEvictionCheck(t *testing.T) {
	for v, want := range map[string]bool{"": true, "enforce": true, "skip": false} {
		c, err := Load(func(k string) string { return map[string]string{"REDIS_EVICTION_CHECK": v}[k] }, Defaults())
		if err != nil || c.RedisEvictionChecked != want {
			t.Errorf("REDIS_EVICTION_CHECK=%q: %v, %v; want %v", v, c.RedisEvictionChecked, err, want)
		}
	}
	if _, err := Load(func(k string) string { return map[string]string{"REDIS_EVICTION_CHECK": "off"}[k] }, Defaults()); err == nil ||
		!strings.Contains(err.Error(), `REDIS_EVICTION_CHECK="off": want enforce`) {
		t.Errorf("REDIS_EVICTION_CHECK=off: %v", err)
	}
}

// QUOTE_RATE_LIMIT and INQUIRY_REFUSAL_RATE_LIMIT default to 60 per minute;
// 0 turns a limit off; anything but a whole number of 0 or more stops the
// start with a message naming the variable.
func TestInquiryRateLimits(t *testing.T) {
	for _, tt := range []struct {
		env             map[string]string
		quote, refusals int
		wantErr         string // "" for none
	}{
		{env: map[string]string{}, quote: 60, refusals: 60},
		{env: map[string]string{"QUOTE_RATE_LIMIT": "120", "INQUIRY_REFUSAL_RATE_LIMIT": " 10 "}, quote: 120, refusals: 10},
		{env: map[string]string{"QUOTE_RATE_LIMIT": "0", "INQUIRY_REFUSAL_RATE_LIMIT": "0"}, quote: 0, refusals: 0},
		{env: map[string]string{"QUOTE_RATE_LIMIT": "-1"}, wantErr: `QUOTE_RATE_LIMIT="-1": want a whole number`},
		{env: map[string]string{"INQUIRY_REFUSAL_RATE_LIMIT": "1.5"}, wantErr: `INQUIRY_REFUSAL_RATE_LIMIT="1.5": want a whole number`},
		{env: map[string]string{"QUOTE_RATE_LIMIT": "60/m"}, wantErr: "QUOTE_RATE_LIMIT"},
	} {
		c, err := Load(func(k string) string { return tt.env[k] }, Defaults())
		switch {
		case tt.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%v: error %v, want one containing %q", tt.env, err, tt.wantErr)
			}
		case err != nil:
			t.Errorf("%v: %v", tt.env, err)
		case c.QuoteRateLimit != tt.quote || c.InquiryRefusalRateLimit != tt.refusals:
			t.Errorf("%v: quote %d, refusals %d; want %d, %d", tt.env, c.QuoteRateLimit, c.InquiryRefusalRateLimit, tt.quote, tt.refusals)
		}
	}
}

// AUTH_FAILURE_RATE_LIMIT defaults to 30 failed authentications a minute
// per source address; 0 turns it off; anything else stops the start.
func TestAuthFailureRateLimit(t *testing.T) {
	for _, tt := range []struct {
		value   string
		want    int
		wantErr string
	}{
		{value: "", want: 30},
		{value: "100", want: 100},
		{value: "0", want: 0},
		{value: "-5", wantErr: `AUTH_FAILURE_RATE_LIMIT="-5": want a whole number`},
		{value: "30/m", wantErr: "AUTH_FAILURE_RATE_LIMIT"},
	} {
		c, err := Load(func(k string) string {
			if k == "AUTH_FAILURE_RATE_LIMIT" {
				return tt.value
			}
			return ""
		}, Defaults())
		switch {
		case tt.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%q: error %v, want one containing %q", tt.value, err, tt.wantErr)
			}
		case err != nil:
			t.Errorf("%q: %v", tt.value, err)
		case c.AuthFailureRateLimit != tt.want:
			t.Errorf("%q: %d, want %d", tt.value, c.AuthFailureRateLimit, tt.want)
		}
	}
}

// DISBURSEMENT_RETURN_WATCH: 72 h by default, 0 turns the watch off.
func TestReturnWatch(t *testing.T) {
	c, err := Load(func(string) string { return "" }, Defaults())
	if err != nil || c.PayoutReturnWatch() != 72*time.Hour {
		t.Fatalf("default return watch %v, %v", c.PayoutReturnWatch(), err)
	}
	c, err = Load(func(k string) string { return map[string]string{"DISBURSEMENT_RETURN_WATCH": "0"}[k] }, Defaults())
	if err != nil || c.PayoutReturnWatch() >= 0 {
		t.Fatalf("DISBURSEMENT_RETURN_WATCH=0 gives %v, %v; want off (negative)", c.PayoutReturnWatch(), err)
	}
}

// The vendors' guards default to 64 calls under way, a 1 s wait for a
// slot, a breaker opening after 5 failures and open 10 s; none may be
// zero, and a bad value stops the start naming the variable.
func TestVendorGuards(t *testing.T) {
	for _, tt := range []struct {
		env                   map[string]string
		concurrency, failures int
		wait, openFor         time.Duration
		wantErr               string
	}{
		{env: map[string]string{}, concurrency: 64, failures: 5, wait: time.Second, openFor: 10 * time.Second},
		{env: map[string]string{"VENDOR_MAX_CONCURRENCY": "8", "VENDOR_BREAKER_FAILURES": "3", "VENDOR_QUEUE_WAIT": "250ms", "VENDOR_BREAKER_OPEN_FOR": "1m"},
			concurrency: 8, failures: 3, wait: 250 * time.Millisecond, openFor: time.Minute},
		{env: map[string]string{"VENDOR_MAX_CONCURRENCY": "0"}, wantErr: `VENDOR_MAX_CONCURRENCY="0": want a whole number, 1 or more`},
		{env: map[string]string{"VENDOR_BREAKER_FAILURES": "many"}, wantErr: `VENDOR_BREAKER_FAILURES="many"`},
		{env: map[string]string{"VENDOR_QUEUE_WAIT": "0s"}, wantErr: "VENDOR_QUEUE_WAIT must be greater than zero"},
		{env: map[string]string{"VENDOR_BREAKER_OPEN_FOR": "soon"}, wantErr: "VENDOR_BREAKER_OPEN_FOR"},
	} {
		c, err := Load(func(k string) string { return tt.env[k] }, Defaults())
		switch {
		case tt.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%v: error %v, want one containing %q", tt.env, err, tt.wantErr)
			}
		case err != nil:
			t.Errorf("%v: %v", tt.env, err)
		case c.VendorMaxConcurrency != tt.concurrency || c.VendorBreakerFailures != tt.failures ||
			c.VendorQueueWait != tt.wait || c.VendorBreakerOpenFor != tt.openFor:
			t.Errorf("%v: %d %d %s %s; want %d %d %s %s", tt.env, c.VendorMaxConcurrency, c.VendorBreakerFailures, c.VendorQueueWait,
				c.VendorBreakerOpenFor, tt.concurrency, tt.failures, tt.wait, tt.openFor)
		}
	}
}

func TestPrometheusURL(t *testing.T) {
	for _, tc := range []struct {
		value string
		ok    bool
	}{{"", true}, {"http://prometheus:9090", true}, {"https://prom.example/", true}, {"prometheus:9090", false}, {"ftp://x", false}} {
		_, err := Load(func(k string) string {
			if k == "PROMETHEUS_URL" {
				return tc.value
			}
			return ""
		}, Defaults())
		if (err == nil) != tc.ok {
			t.Errorf("PROMETHEUS_URL=%q: error %v, want ok %v", tc.value, err, tc.ok)
		}
	}
}

// XENDIT_INQUIRY_BANK spans two adapters: it names a bank of SNAP_BANKS,
// and only with Xendit configured.
func TestXenditInquiryBank(t *testing.T) {
	keys := snapKeys(t)
	xenditEnv := func(bank string) map[string]string {
		env := snapEnv(keys)
		env["XENDIT_SECRET_KEY"], env["XENDIT_CALLBACK_TOKEN"], env["XENDIT_INQUIRY_BANK"] = "xnd_production_K", "T", bank
		return env
	}
	withoutKey := xenditEnv("bca")
	delete(withoutKey, "XENDIT_SECRET_KEY")
	delete(withoutKey, "XENDIT_CALLBACK_TOKEN")
	for _, tt := range []struct {
		name    string
		env     map[string]string
		want    string
		wantErr string
	}{
		{"a SNAP bank", xenditEnv(" BCA "), "bca", ""},
		{"unset", xenditEnv(""), "", ""},
		{"not a SNAP bank", xenditEnv("bri"), "", "XENDIT_INQUIRY_BANK=bri is not a configured SNAP bank: list it in SNAP_BANKS with its SNAP_BRI_* variables"},
		{"without Xendit", withoutKey, "", "XENDIT_INQUIRY_BANK is set without XENDIT_SECRET_KEY"},
	} {
		c, err := Load(func(k string) string { return tt.env[k] }, Defaults())
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("%s: error %v, want one containing %q", tt.name, err, tt.wantErr)
		case err == nil && c.XenditInquiryBank != tt.want:
			t.Errorf("%s: inquiry bank %q, want %q", tt.name, c.XenditInquiryBank, tt.want)
		}
	}
}

// Printing the whole configuration shows no SNAP secret and no full
// source account: each bank prints itself (snap.BankConfig.String).
func TestSnapSecretsNeverPrinted(t *testing.T) {
	env := snapEnv(snapKeys(t))
	c, err := Load(func(k string) string { return env[k] }, Defaults())
	if err != nil {
		t.Fatal(err)
	}
	d := fmt.Sprint(testKey.D)[:12]
	for _, s := range []string{fmt.Sprintf("%v", c), fmt.Sprintf("%+v", c)} {
		for _, secret := range []string{"CLIENT-SECRET-XYZ", "8880001111", d} {
			if strings.Contains(s, secret) {
				t.Errorf("printed configuration shows %q: %s", secret, s)
			}
		}
	}
}
