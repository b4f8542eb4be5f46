package api

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"testing"

	"github.com/google/uuid"

	"github.com/payoutd/payoutd/admin"
	"github.com/payoutd/payoutd/vendors"
	"github.com/payoutd/payoutd/vendors/sandbox"
)

func TestWalletListEmpty(t *testing.T) {
	t.Parallel()
	b := setup(t)
	m := b.newMerchant()
	r := b.do(request{path: "/api/v3/wallets", apiKey: m.apiKey, sign: m.signingSecret})
	r.expect(t, 200, "")
	if string(r.body) != `{"wallets":[],"total_count":0}` {
		t.Fatalf("empty list body %s", r.body)
	}
}

func TestWalletListShowsOnlyTheCallersProvisionedWallets(t *testing.T) {
	t.Parallel()
	b := setup(t)
	m := b.newMerchant()
	other := b.newMerchant()
	first := b.newWallet(m.id, "Main", sandbox.SimBank, false)
	second := b.newWallet(m.id, "E-wallets", sandbox.SimWallet, false)
	b.newWallet(m.id, "Being set up", sandbox.SimBank, true)
	b.newWallet(other.id, "Not yours", sandbox.SimBank, false)

	var list struct {
		Wallets []struct {
			WalletID string `json:"wallet_id"`
			Name     string `json:"name"`
		} `json:"wallets"`
		TotalCount int `json:"total_count"`
	}
	r := b.do(request{path: "/api/v3/wallets", apiKey: m.apiKey, timestamp: true})
	r.expect(t, 200, "")
	r.decode(t, &list)
	if list.TotalCount != 2 || len(list.Wallets) != 2 {
		t.Fatalf("want 2 wallets with total_count 2, got %s", r.body)
	}
	if list.Wallets[0].WalletID != first.String() || list.Wallets[0].Name != "Main" ||
		list.Wallets[1].WalletID != second.String() || list.Wallets[1].Name != "E-wallets" {
		t.Fatalf("wrong wallets or order: %s", r.body)
	}
}

func TestWalletBalance(t *testing.T) {
	t.Parallel()
	b := setup(t)
	m := b.newMerchant()
	w := b.newWallet(m.id, "Main", sandbox.SimBank, false)
	balance := func() map[string]any {
		var got map[string]any
		r := b.do(request{path: "/api/v3/wallets/" + w.String() + "/balance", apiKey: m.apiKey, sign: m.signingSecret})
		r.expect(t, 200, "")
		r.decode(t, &got)
		return got
	}
	want := map[string]any{"wallet_id": w.String(), "name": "Main", "balance": "0.0000", "available": "0.0000", "locked": "0.0000", "currency": "IDR"}
	if got := balance(); !reflect.DeepEqual(got, want) {
		t.Fatalf("new wallet balance %v, want %v", got, want)
	}
	b.fund(w, "1500000.5")
	if got := balance()["balance"]; got != "1500000.5000" {
		t.Fatalf("balance %v, want 1500000.5000", got)
	}
	b.fund(w, "-2000000")
	got := balance()
	if got["balance"] != "-499999.5000" || got["available"] != "-499999.5000" {
		t.Fatalf("negative balance shown as %v", got)
	}
}

// TestWalletRoutesIsolateClients: another client's wallet, a wallet still
// provisioning and a wallet that does not exist are all the same 404, on
// every wallet route.
func TestWalletRoutesIsolateClients(t *testing.T) {
	t.Parallel()
	b := setup(t)
	m := b.newMerchant()
	other := b.newMerchant()
	mine := b.newWallet(m.id, "Mine", sandbox.SimBank, false)
	provisioning := b.newWallet(m.id, "Later", sandbox.SimBank, true)
	theirs := b.newWallet(other.id, "Theirs", sandbox.SimBank, false)
	b.fund(theirs, "999")

	for _, route := range []string{"balance", "banks"} {
		for name, id := range map[string]uuid.UUID{"another client's": theirs, "provisioning": provisioning, "unknown": uuid.New()} {
			t.Run(route+"/"+name, func(t *testing.T) {
				r := b.do(request{path: "/api/v3/wallets/" + id.String() + "/" + route, apiKey: m.apiKey, timestamp: true})
				r.expect(t, 404, "wallet not found")
			})
		}
		t.Run(route+"/own", func(t *testing.T) {
			b.do(request{path: "/api/v3/wallets/" + mine.String() + "/" + route, apiKey: m.apiKey, timestamp: true}).expect(t, 200, "")
			b.do(request{path: "/api/v3/wallets/" + theirs.String() + "/" + route, apiKey: other.apiKey, timestamp: true}).expect(t, 200, "")
		})
		for _, bad := range []string{"not-a-uuid", "123", mine.String() + "0", "%00", "6f1c2a9e8d4b4c3e9a7f1b2c3d4e5f60"} {
			t.Run(route+"/bad id "+bad, func(t *testing.T) {
				r := b.do(request{path: "/api/v3/wallets/" + bad + "/" + route, apiKey: m.apiKey, timestamp: true})
				r.expect(t, 400, "wallet_id must be a UUID such as 6f1c2a9e-8d4b-4c3e-9a7f-1b2c3d4e5f60")
			})
		}
	}
	// Provisioned later, the wallet becomes visible.
	if _, err := b.server.store.ActivateWallet(context.Background(), provisioning); err != nil {
		t.Fatal(err)
	}
	b.do(request{path: "/api/v3/wallets/" + provisioning.String() + "/balance", apiKey: m.apiKey, timestamp: true}).expect(t, 200, "")
}

type bankList struct {
	Banks []struct {
		Code                   string   `json:"code"`
		Name                   string   `json:"name"`
		Swift                  string   `json:"swift"`
		SupportedTransferTypes []string `json:"supported_transfer_types"`
	} `json:"banks"`
	TotalCount int `json:"total_count"`
}

func TestWalletBanksFollowTheVendor(t *testing.T) {
	t.Parallel()
	b := setup(t)
	m := b.newClient(admin.ClientOptions{})
	bank := b.newWallet(m.id, "Banks", sandbox.SimBank, false)
	ewallet := b.newWallet(m.id, "E-wallets", sandbox.SimWallet, false)

	list := func(id uuid.UUID) (bankList, map[string][]string) {
		var l bankList
		r := b.do(request{path: "/api/v3/wallets/" + id.String() + "/banks", apiKey: m.apiKey, sign: m.signingSecret})
		r.expect(t, 200, "")
		r.decode(t, &l)
		if l.TotalCount != len(l.Banks) {
			t.Fatalf("total_count %d for %d banks", l.TotalCount, len(l.Banks))
		}
		types := map[string][]string{}
		for _, b := range l.Banks {
			types[b.Code] = b.SupportedTransferTypes
		}
		return l, types
	}
	simbank, simbankTypes := list(bank)
	if simbank.TotalCount != 14 {
		t.Fatalf("simbank lists %d entries, want the 14 banks", simbank.TotalCount)
	}
	if simbank.Banks[0].Code != "bca" || simbank.Banks[0].Name != "Bank Central Asia" || simbank.Banks[0].Swift != "CENAIDJA" {
		t.Fatalf("first simbank entry %+v", simbank.Banks[0])
	}
	if _, ok := simbankTypes["dana"]; ok {
		t.Fatal("simbank must not list e-wallets")
	}
	if !reflect.DeepEqual(simbankTypes["mandiri"], []string{"BIFAST", "RTOL"}) {
		t.Fatalf("simbank mandiri types %v", simbankTypes["mandiri"])
	}

	simwallet, simwalletTypes := list(ewallet)
	if simwallet.TotalCount != 12 {
		t.Fatalf("simwallet lists %d entries, want 7 banks + 5 e-wallets", simwallet.TotalCount)
	}
	for _, code := range []string{"bca", "bri", "bni", "mandiri", "bsi", "jago", "seabank", "dana", "gopay", "ovo", "linkaja", "shopeepay"} {
		if !reflect.DeepEqual(simwalletTypes[code], []string{"BIFAST"}) {
			t.Fatalf("simwallet %s: types %v, want [BIFAST]", code, simwalletTypes[code])
		}
	}
	if _, ok := simwalletTypes["cimb"]; ok {
		t.Fatal("simwallet must not list cimb")
	}
}

// bankListDown is a vendor whose bank list cannot be read (a timeout or a
// 5xx of the vendor's API).
type bankListDown struct{ vendors.Vendor }

func (bankListDown) Banks(context.Context) ([]vendors.Bank, error) {
	return nil, fmt.Errorf("%w: bank list endpoint down (test)", vendors.ErrUnavailable)
}

// A vendor that cannot list its banks is the gateway being unavailable:
// the bank list answers 503 with the message quote gives for the same
// failure, never a 500.
func TestWalletBanksGatewayDown(t *testing.T) {
	t.Parallel()
	registry := sandbox.Registry(sandbox.Options{})
	registry[sandbox.SimBank] = bankListDown{registry[sandbox.SimBank]}
	b := setup(t, setupOptions{vendors: registry})
	m := b.newClient(admin.ClientOptions{})
	wallet := b.newWallet(m.id, "Banks", sandbox.SimBank, false)
	b.fund(wallet, "1000000")
	const gatewayDown = "payout gateway is temporarily unavailable; retry later"

	b.do(request{path: "/api/v3/wallets/" + wallet.String() + "/banks", apiKey: m.apiKey, sign: m.signingSecret}).
		expect(t, http.StatusServiceUnavailable, gatewayDown)
	body := []byte(`{"client_wallet_id":"` + wallet.String() + `","amount":"100000","bank_code":"bca","account_no":"1234567890","transfer_type":"BIFAST"}`)
	b.do(request{method: http.MethodPost, path: "/api/v3/disbursements/quote", body: body, apiKey: m.apiKey, sign: m.signingSecret}).
		expect(t, http.StatusServiceUnavailable, gatewayDown)
}
