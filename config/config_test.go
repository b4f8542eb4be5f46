package config

import (
	"strings"
	"testing"
	"time"

	"github.com/payoutd/payoutd/payments"
)

func TestMetricsAddr(t *testing.T) {
	for _, tt := range []struct {
		env     map[string]string
		wantErr string // "" for none
	}{
		{map[string]string{}, ""},
		{map[string]string{"METRICS_ADDR": ":9090", "ADMIN_USER": "ops", "ADMIN_PASSWORD": "s3cret"}, ""},
		{map[string]string{"METRICS_ADDR": "9090", "ADMIN_USER": "ops", "ADMIN_PASSWORD": "s3cret"}, `METRICS_ADDR="9090": want host:port`},
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
		cal := c.SettlementCalendar()
		if len(cal.Holidays) != len(tt.holidays) || cal.Delay != tt.delay {
			t.Errorf("%v: calendar %+v, want holidays %v and delay %s", tt.env, cal, tt.holidays, tt.delay)
		}
		for _, day := range tt.holidays {
			if d, _ := time.ParseInLocation(time.DateOnly, day, payments.Jakarta); cal.BusinessDay(d) {
				t.Errorf("%v: %s is a business day of the calendar", tt.env, day)
			}
		}
	}
}

// The disbursement settings default to DESIGN.md's values when unset, and
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

// The HTTP vendor adapter takes two secrets, both required and never
// equal; the old single VENDORSIM_SECRET is refused by name.
func TestVendorSimSecrets(t *testing.T) {
	url := "http://vendorsim:8090"
	for _, tt := range []struct {
		env     map[string]string
		wantErr string
	}{
		{map[string]string{"VENDORSIM_URL": url, "VENDORSIM_TOKEN": "t", "VENDORSIM_CALLBACK_SECRET": "c"}, ""},
		{map[string]string{"VENDORSIM_URL": url, "VENDORSIM_TOKEN": "t"}, "VENDORSIM_TOKEN and VENDORSIM_CALLBACK_SECRET are required"},
		{map[string]string{"VENDORSIM_URL": url, "VENDORSIM_TOKEN": "same", "VENDORSIM_CALLBACK_SECRET": "same"}, "must differ"},
		{map[string]string{"VENDORSIM_URL": url, "VENDORSIM_SECRET": "old", "VENDORSIM_TOKEN": "t", "VENDORSIM_CALLBACK_SECRET": "c"}, "VENDORSIM_SECRET is no longer read"},
	} {
		c, err := Load(func(k string) string { return tt.env[k] }, Defaults())
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("%v: %v", tt.env, err)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("%v: error %v, want one containing %q", tt.env, err, tt.wantErr)
		case err == nil && (c.VendorSimToken != "t" || c.VendorSimCallbackSecret != "c"):
			t.Errorf("%v: token %q callback secret %q", tt.env, c.VendorSimToken, c.VendorSimCallbackSecret)
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
