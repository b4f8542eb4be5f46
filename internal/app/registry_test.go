package app

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/payoutd/payoutd/internal/config"
	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors"
	"github.com/payoutd/payoutd/vendors/snap"
	"github.com/payoutd/payoutd/vendors/xendit"
	"github.com/payoutd/payoutd/vendors/xendit/xenditsim"
)

// xendit is in the registry, in-process or over VENDORSIM_URL, exactly
// when XENDIT_SECRET_KEY is set, and its String shows no secret.
func TestVendorRegistryXendit(t *testing.T) {
	for _, sim := range []string{"", "http://127.0.0.1:8090"} {
		cfg := config.Defaults()
		cfg.VendorSim.URL, cfg.VendorSim.Token, cfg.VendorSim.CallbackSecret = sim, "t", "c"
		reg, err := VendorRegistry(cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := reg.Get(xendit.Name); err == nil || !strings.Contains(err.Error(), "unknown vendor") {
			t.Errorf("VENDORSIM_URL=%q, no key: xendit: %v", sim, err)
		}
		cfg.Xendit.SecretKey, cfg.Xendit.CallbackToken = "xnd_SECRET", "TOKEN"
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

// snap:<bank> is in the registry, in-process or over VENDORSIM_URL, for
// each bank of SNAP_BANKS and no other; its String shows no secret.
func TestVendorRegistrySnap(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	bank := func(slug string) snap.BankConfig {
		return snap.BankConfig{Bank: slug, BaseURL: "https://snap.bank.example", PartnerID: "P", ClientKey: "K",
			ClientSecret: "SNAP-SECRET", ChannelID: "95221", SourceAccount: "8880001111", PrivateKey: key, BankPublicKey: &key.PublicKey}
	}
	for _, sim := range []string{"", "http://127.0.0.1:8090"} {
		cfg := config.Defaults()
		cfg.VendorSim.URL, cfg.VendorSim.Token, cfg.VendorSim.CallbackSecret = sim, "t", "c"
		reg, err := VendorRegistry(cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := reg.Get("snap:bca"); err == nil || !strings.Contains(err.Error(), "unknown vendor") {
			t.Errorf("VENDORSIM_URL=%q, no SNAP_BANKS: snap:bca: %v", sim, err)
		}
		cfg.SnapBanks = []snap.BankConfig{bank("bca"), bank("bri")}
		if reg, err = VendorRegistry(cfg, nil); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"snap:bca", "snap:bri"} {
			v, err := reg.Get(name)
			if err != nil {
				t.Fatalf("VENDORSIM_URL=%q: %v", sim, err)
			}
			if _, ok := v.(vendors.CallbackParser); !ok {
				t.Errorf("%s parses no notification", name)
			}
			if s := fmt.Sprint(v); strings.Contains(s, "SNAP-SECRET") || strings.Contains(s, "8880001111") {
				t.Errorf("String() = %q shows a secret", s)
			}
		}
		if len(reg) != 4 {
			t.Errorf("VENDORSIM_URL=%q: vendors %v, want the two sandbox ones and two SNAP banks", sim, reg.Names())
		}
	}
}

// A SNAP bank configured without notifications (and so without the bank's
// public key) starts, and its paid payouts are watched for returns: it
// does not notify. The start log says, per rail, how its results come.
func TestSnapNotificationsAndTheStartLog(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Defaults()
	cfg.Xendit.SecretKey, cfg.Xendit.CallbackToken = "xnd_development_k", "TOKEN"
	cfg.SnapBanks = []snap.BankConfig{
		{Bank: "bca", BaseURL: "https://snap.bank.example", PartnerID: "P", ClientKey: "K", ClientSecret: "S", ChannelID: "95221",
			SourceAccount: "8880001111", PrivateKey: key, BankPublicKey: &key.PublicKey, Notifications: true},
		{Bank: "bri", BaseURL: "https://snap.bank.example", PartnerID: "P", ClientKey: "K", ClientSecret: "S", ChannelID: "95221",
			SourceAccount: "8880001111", PrivateKey: key},
	}
	reg, err := VendorRegistry(cfg, nil)
	if err != nil {
		t.Fatalf("a SNAP bank without notifications or its public key: %v", err)
	}
	for name, want := range map[string]bool{"snap:bca": true, "snap:bri": false, xendit.Name: true} {
		v, _ := reg.Get(name)
		if got := vendors.Notifies(v); got != want {
			t.Errorf("%s notifies: %v, want %v", name, got, want)
		}
	}

	var buf bytes.Buffer
	logRailResults(slog.New(slog.NewTextHandler(&buf, nil)), cfg, reg)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	want := []string{
		`level=INFO msg="rail results come by notification, each confirmed by status inquiry" vendor=xendit`,
		`level=INFO msg="rail results come by notification, each confirmed by status inquiry" vendor=snap:bca`,
		`level=INFO msg="rail results come by status inquiry; returns are watched by status inquiry for the return window after payment" vendor=snap:bri return_watch=72h0m0s`,
	}
	if len(lines) != len(want) {
		t.Fatalf("start log:\n%s\nwant one line per rail", buf.String())
	}
	for i, w := range want {
		if !strings.HasSuffix(lines[i], w) {
			t.Errorf("line %d: %s\nwant it to end %s", i, lines[i], w)
		}
	}
	buf.Reset()
	cfg.DisbursementReturnWatch = 0
	logRailResults(slog.New(slog.NewTextHandler(&buf, nil)), cfg, reg)
	if !strings.Contains(buf.String(), `level=WARN msg="rail results come by status inquiry and the return watch is off (DISBURSEMENT_RETURN_WATCH=0): a return of a paid payout is not learnt" vendor=snap:bri`) {
		t.Errorf("watch off, start log:\n%s", buf.String())
	}
}

// Xendit's borrowed name inquiry asks the SNAP bank of XENDIT_INQUIRY_BANK
// as the composed registry has it, behind the guard the api and worker
// put on every vendor (breaker, metrics): a bank that is down is refused
// fast for Xendit's quotes too.
func TestXenditInquiryGoesThroughTheGuardedBank(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	sim, err := xenditsim.New(xenditsim.Options{SecretKey: "xnd_development_k", CallbackToken: "TOKEN"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	cfg := config.Defaults()
	cfg.Xendit.SecretKey, cfg.Xendit.CallbackToken, cfg.Xendit.BaseURL = "xnd_development_k", "TOKEN", srv.URL
	cfg.XenditInquiryBank = "bca"
	cfg.SnapBanks = []snap.BankConfig{{Bank: "bca", BaseURL: "https://snap.bank.example", PartnerID: "P", ClientKey: "K",
		ClientSecret: "S", ChannelID: "95221", SourceAccount: "8880001111", PrivateKey: key}}
	guarded := &nameTeller{Vendor: nil, name: "GUARDED BANK"}
	reg, err := composeVendors(cfg, nil, func(reg vendors.Registry) vendors.Registry {
		guarded.Vendor = reg["snap:bca"]
		reg["snap:bca"] = guarded
		return reg
	})
	if err != nil {
		t.Fatal(err)
	}
	x, _ := reg.Get(xendit.Name)
	acc, err := x.Inquire(context.Background(), vendors.InquiryRequest{BankCode: "bri", AccountNo: "1234567890", TransferType: models.BIFAST})
	if err != nil || acc.HolderName != "GUARDED BANK" || guarded.calls != 1 {
		t.Fatalf("Xendit's inquiry = %+v, %v after %d calls of the guarded bank; want its name, once", acc, err, guarded.calls)
	}
}

// nameTeller stands for a guarded vendor: it answers every inquiry with name.
type nameTeller struct {
	vendors.Vendor
	name  string
	calls int
}

func (n *nameTeller) Inquire(context.Context, vendors.InquiryRequest) (vendors.Account, error) {
	n.calls++
	return vendors.Account{HolderName: n.name}, nil
}
