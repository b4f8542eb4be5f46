package app

import (
	"strings"
	"testing"

	"github.com/payoutd/payoutd/internal/config"
	"github.com/payoutd/payoutd/vendors/xendit"
)

// xendit is in the registry, in-process or over VENDORSIM_URL, exactly
// when XENDIT_SECRET_KEY is set, and its String shows no secret.
func TestVendorRegistryXendit(t *testing.T) {
	for _, sim := range []string{"", "http://127.0.0.1:8090"} {
		cfg := config.Defaults()
		cfg.VendorSimURL, cfg.VendorSimToken, cfg.VendorSimCallbackSecret = sim, "t", "c"
		reg, err := VendorRegistry(cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := reg.Get(xendit.Name); err == nil || !strings.Contains(err.Error(), "unknown vendor") {
			t.Errorf("VENDORSIM_URL=%q, no key: xendit: %v", sim, err)
		}
		cfg.XenditSecretKey, cfg.XenditCallbackToken = "xnd_SECRET", "TOKEN"
		if reg, err = VendorRegistry(cfg, nil); err != nil {
			t.Fatal(err)
		}
		v, err := reg.Get(xendit.Name)
		if err != nil {
			t.Fatalf("VENDORSIM_URL=%q: %v", sim, err)
		}
		if len(reg) != 3 {
			t.Errorf("VENDORSIM_URL=%q: vendors %v, want the two sandbox ones and xendit", sim, reg.Names())
		}
		if s := v.(interface{ String() string }).String(); strings.Contains(s, "SECRET") || strings.Contains(s, "TOKEN") {
			t.Errorf("String() = %q shows a secret", s)
		}
	}
}
