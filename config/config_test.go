package config

import (
	"strings"
	"testing"
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
