package vendors

import (
	"context"
	"testing"

	"github.com/payoutd/payoutd/models"
)

// wantBanks is testdata/banks.tsv of the design (code, name, SWIFT), in its
// order.
var wantBanks = []struct{ code, name, swift string }{
	{"bca", "Bank Central Asia", "CENAIDJA"},
	{"bri", "Bank Rakyat Indonesia", "BRINIDJA"},
	{"bni", "Bank Negara Indonesia", "BNINIDJA"},
	{"mandiri", "Bank Mandiri", "BMRIIDJA"},
	{"cimb", "CIMB Niaga", "BNIAIDJA"},
	{"permata", "Bank Permata", "BBBAIDJA"},
	{"bsi", "Bank Syariah Indonesia", "BSMDIDJA"},
	{"danamon", "Bank Danamon", "BDINIDJA"},
	{"btn", "Bank Tabungan Negara", "BTANIDJA"},
	{"jago", "Bank Jago", "JAGBIDJA"},
	{"seabank", "SeaBank Indonesia", "SSPIIDJA"},
	{"neo", "Bank Neo Commerce", "YUDBIDJ1"},
	{"ocbc", "OCBC NISP", "NISPIDJA"},
	{"maybank", "Maybank Indonesia", "IBBKIDJA"},
}

var wantEWallets = []string{"dana", "gopay", "ovo", "linkaja", "shopeepay"}

func TestDirectory(t *testing.T) {
	t.Parallel()
	dir := Directory()
	if len(dir) != len(wantBanks)+len(wantEWallets) {
		t.Fatalf("Directory has %d entries, want %d banks + %d e-wallets", len(dir), len(wantBanks), len(wantEWallets))
	}
	for i, w := range wantBanks {
		b := dir[i]
		if b.Code != w.code || b.Name != w.name || b.SWIFT != w.swift {
			t.Errorf("Directory[%d] = {%q %q %q}, want {%q %q %q}", i, b.Code, b.Name, b.SWIFT, w.code, w.name, w.swift)
		}
		if b.EWallet {
			t.Errorf("bank %s marked as an e-wallet", b.Code)
		}
		if len(b.TransferTypes) != 0 {
			t.Errorf("Directory bank %s has transfer types %v; vendors set their own", b.Code, b.TransferTypes)
		}
	}
	for i, code := range wantEWallets {
		b := dir[len(wantBanks)+i]
		if b.Code != code || !b.EWallet || b.Name == "" {
			t.Errorf("Directory e-wallet %d = %+v, want code %q, EWallet, a name", i, b, code)
		}
		if b.SWIFT != "" {
			t.Errorf("e-wallet %s has SWIFT %q, want none", b.Code, b.SWIFT)
		}
	}
	seen := map[string]bool{}
	for _, b := range dir {
		if seen[b.Code] {
			t.Errorf("code %q listed twice", b.Code)
		}
		seen[b.Code] = true
		if b.Code == "code" || b.Name == "name" {
			t.Errorf("header row of banks.tsv leaked into the directory: %+v", b)
		}
	}
}

// Callers may modify what Directory returns without affecting later calls.
func TestDirectoryReturnsFreshSlice(t *testing.T) {
	t.Parallel()
	a := Directory()
	a[0].Name = "changed"
	a[len(a)-1].Name = "changed"
	b := Directory()
	if b[0].Name != "Bank Central Asia" || b[len(b)-1].Name == "changed" {
		t.Errorf("Directory shares state between calls: %q, %q", b[0].Name, b[len(b)-1].Name)
	}
}

func TestFindBank(t *testing.T) {
	t.Parallel()
	dir := Directory()
	tests := []struct {
		code   string
		want   string
		wantOK bool
	}{
		{"bca", "bca", true},
		{"BCA", "bca", true},
		{" Mandiri ", "mandiri", true},
		{"GoPay", "gopay", true},
		{"", "", false},
		{"bcaa", "", false},
		{"014", "", false}, // BI codes are not bank codes
		{"CENAIDJA", "", false},
	}
	for _, tt := range tests {
		b, ok := FindBank(dir, tt.code)
		if ok != tt.wantOK || b.Code != tt.want {
			t.Errorf("FindBank(%q) = %q, %v; want %q, %v", tt.code, b.Code, ok, tt.want, tt.wantOK)
		}
	}
}

func TestBankSupportsTransfer(t *testing.T) {
	t.Parallel()
	b := Bank{TransferTypes: []models.TransferType{models.BIFAST}}
	if !b.SupportsTransfer(models.BIFAST) || b.SupportsTransfer(models.RTOL) || b.SupportsTransfer("bifast") {
		t.Errorf("SupportsTransfer wrong for %v", b.TransferTypes)
	}
	if (Bank{}).SupportsTransfer(models.BIFAST) {
		t.Error("a bank without transfer types supports BIFAST")
	}
}

type namedVendor struct{ Vendor }

func (n namedVendor) Name() string { return "fake" }

func (namedVendor) Banks(context.Context) ([]Bank, error) { return nil, nil }

func TestRegistry(t *testing.T) {
	t.Parallel()
	r := NewRegistry(namedVendor{})
	v, err := r.Get("fake")
	if err != nil || v.Name() != "fake" {
		t.Errorf("Get(fake) = %v, %v", v, err)
	}
	if _, err := r.Get("missing"); err == nil {
		t.Error("Get(missing) succeeded")
	}
	if names := r.Names(); len(names) != 1 || names[0] != "fake" {
		t.Errorf("Names = %v", names)
	}
}
