package vendorsim

import (
	"strings"
	"testing"

	"github.com/payoutd/payoutd/models"
)

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
		// Staging: http to the simulator's service name is staging's only.
		c, err := LoadConfig(func(k string) string { return tt.env[k] }, models.Staging, Config{})
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("%v: %v", tt.env, err)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("%v: error %v, want one containing %q", tt.env, err, tt.wantErr)
		case err == nil && (c.Token != "t" || c.CallbackSecret != "c"):
			t.Errorf("%v: token %q callback secret %q", tt.env, c.Token, c.CallbackSecret)
		}
	}
}
