package app

import (
	"testing"

	"github.com/payoutd/payoutd/internal/config"
	"github.com/payoutd/payoutd/internal/testenv"
	"github.com/payoutd/payoutd/vendors"
)

// The xendit vendor is there exactly when XENDIT_SECRET_KEY is set, beside
// the sandbox vendors; a wallet on it is then payable and its callbacks
// (POST /vendor-callbacks/xendit) have a parser.
func TestVendorRegistryAddsXenditWhenConfigured(t *testing.T) {
	db := testenv.DB(t)
	cfg := config.Defaults()
	r, err := VendorRegistry(cfg, db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Get("xendit"); err == nil {
		t.Fatal("xendit is registered without XENDIT_SECRET_KEY")
	}
	cfg.XenditSecretKey, cfg.XenditCallbackToken = "xnd_development_k", "callback-token"
	if r, err = VendorRegistry(cfg, db); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"simbank", "simwallet", "xendit"} {
		if _, err := r.Get(name); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	x, _ := r.Get("xendit")
	if _, ok := x.(vendors.CallbackParser); !ok {
		t.Error("the xendit vendor parses no callbacks")
	}
	cfg.XenditCallbackToken = cfg.XenditSecretKey
	if _, err := VendorRegistry(cfg, db); err == nil {
		t.Error("a callback token equal to the secret key was accepted")
	}
}
