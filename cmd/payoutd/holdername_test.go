package main

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors"
	"github.com/payoutd/payoutd/vendors/sandbox"
	"github.com/payoutd/payoutd/vendors/xendit"
)

// xenditWithInquiryBank is the Xendit rail with a SNAP bank (bca) that
// resolves holder names, as XENDIT_INQUIRY_BANK configures it: both
// simulators behind one URL, SNAP's paths to the bank, the rest to Xendit.
var xenditWithInquiryBank = rail{name: "xendit+snap-inquiry", vendor: xendit.Name, isSubmit: pathEnds("/v2/payouts"),
	start: func(t *testing.T, o railOptions) railSim {
		x, b := startXenditRail(t, o), startSnapRail(t, o)
		mux := http.NewServeMux()
		mux.Handle("/v1.0/", b.handler)
		mux.Handle("/", x.handler)
		return railSim{
			handler: mux,
			run:     func(ctx context.Context) { go b.run(ctx); x.run(ctx) },
			connect: func(t *testing.T, url string) (vendors.Registry, []string) {
				snapReg, snapEnv := b.connect(t, url)
				bank := snapReg["snap:"+snapRailBank]
				xv, err := xendit.New(xendit.Options{BaseURL: url, SecretKey: xenditSimKey, CallbackToken: xenditSimToken,
					Timeout: 2 * time.Second, Inquirer: bank})
				if err != nil {
					t.Fatal(err)
				}
				reg := sandbox.Registry(sandbox.Options{})
				reg[xv.Name()], reg[bank.Name()] = xv, bank
				_, xenditEnv := x.connect(t, url)
				env := append(append(snapEnv, xenditEnv...), "XENDIT_INQUIRY_BANK="+snapRailBank)
				return reg, env
			},
			submits:  x.submits,
			complete: x.complete,
		}
	}}

// A payout from a Xendit wallet reaches SUCCESS with the name the SNAP
// bank's inquiry returned on Xendit's wire, not the merchant's: the name
// Xendit matches is the registered one. api and worker (a `payoutd
// worker` process configured by the environment) on the stack's
// database and Redis; Xendit's simulator refuses a create without the name.
func TestXenditPayoutCarriesTheInquiredHolderName(t *testing.T) {
	s := newStack(t, stackOptions{rail: xenditWithInquiryBank, callbacks: true})
	s.startWorker()
	status, body := s.createWith("holder-1", map[string]string{"account_no": "1234567890", "account_holder_name": "Budi Santoso"})
	if status != http.StatusCreated {
		t.Fatalf("create: %d %v", status, body)
	}
	if got := body["account_holder_name"]; got != "SANDBOX 7890" {
		t.Errorf("create answers account_holder_name %v, want the inquired SANDBOX 7890", got)
	}
	s.waitFor("the payout paid", 30*time.Second, func() bool { return s.counts()[models.StatusSuccess] == 1 })
	s.paidOnce(1)

	var d models.Disbursement
	if err := s.db.Take(&d).Error; err != nil {
		t.Fatal(err)
	}
	if got := xenditHolderOnTheWire(t, s.simURL, d.VendorReference); got != "SANDBOX 7890" {
		t.Errorf("Xendit was sent account_holder_name %q, want the inquired %q", got, "SANDBOX 7890")
	}
}

// With no name source (Xendit has no inquiry of its own, no inquiry bank
// is configured, the merchant sent none) the create is refused with 422
// before anything is locked or sent.
func TestXenditPayoutWithoutAHolderNameIsRefusedBeforeALock(t *testing.T) {
	s := newStack(t, stackOptions{rail: xenditRail})
	status, body := s.createWith("holder-2", map[string]string{"account_holder_name": ""})
	if status != http.StatusUnprocessableEntity || body["error"] != models.ErrHolderNameRequired.Error() {
		t.Fatalf("create without a name: %d %v, want 422 %q", status, body, models.ErrHolderNameRequired)
	}
	if hint, _ := body["hint"].(string); !strings.Contains(hint, "account_holder_name") {
		t.Errorf("hint %q does not say what to send", hint)
	}
	var w models.Wallet
	if err := s.db.Take(&w, "id = ?", s.wallet).Error; err != nil {
		t.Fatal(err)
	}
	if w.Locked != 0 || w.Balance != models.Rupiah(100_000_000) {
		t.Errorf("wallet balance %s locked %s after the refusal, want 100000000 and 0", w.Balance, w.Locked)
	}
	if n := len(s.counts()); n != 0 {
		t.Errorf("disbursements stored: %v", s.counts())
	}

	// The same request with the name is paid with exactly that name.
	status, body = s.createWith("holder-3", map[string]string{"account_holder_name": "  Budi Santoso "})
	if status != http.StatusCreated || body["account_holder_name"] != "Budi Santoso" {
		t.Fatalf("create with a name: %d %v", status, body)
	}
}

// xenditHolderOnTheWire reads the payout of reference back from the
// simulator, as Xendit stored the create it was sent.
func xenditHolderOnTheWire(t *testing.T, simURL, reference string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, simURL+"/v2/payouts?reference_id="+reference, nil)
	req.SetBasicAuth(xenditSimKey, "")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list []struct {
		ChannelProperties struct {
			AccountHolderName string `json:"account_holder_name"`
		} `json:"channel_properties"`
	}
	var wrapped struct {
		Data json.RawMessage `json:"data"`
	}
	var raw json.RawMessage
	if err := json.NewDecoder(resp.Body).Decode(&raw); err != nil {
		t.Fatal(err)
	}
	if json.Unmarshal(raw, &list) != nil {
		if err := json.Unmarshal(raw, &wrapped); err != nil || json.Unmarshal(wrapped.Data, &list) != nil {
			t.Fatalf("payouts by reference: %s", raw)
		}
	}
	if len(list) != 1 {
		t.Fatalf("%d payouts for %s at the simulator, want 1", len(list), reference)
	}
	return list[0].ChannelProperties.AccountHolderName
}
