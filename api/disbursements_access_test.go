package api

import (
	"net/http"
	"testing"

	"github.com/google/uuid"

	"github.com/payoutd/payoutd/admin"
	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors/sandbox"
)

// A holding client (it owns a funded wallet but may not use the API) and a
// client calling from outside its IP allow-list get 403 on create and on
// quote, with validly signed requests: nothing is stored, locked or sent to
// the vendor, and the Idempotency-Key stays free. The same calls from an
// allowed address go through, so the 403 was for the address alone.
func TestDisbursementForbiddenCallers(t *testing.T) {
	t.Parallel()
	forEachQueue(t, payoutSetup{}, func(t *testing.T, e *payoutEnv) {
		funded := func(m merchant) uuid.UUID {
			w := e.newWallet(m.id, "Main", sandbox.SimBank, false)
			e.fund(w, "1000000")
			return w
		}
		holding := e.newClient(admin.ClientOptions{Name: "Holding Co", Kind: models.KindHolding})
		restricted := e.newClient(admin.ClientOptions{Name: "Restricted", AllowedIPs: "198.51.100.0/24"})
		holdingWallet, restrictedWallet := funded(holding), funded(restricted)
		const key = "forbidden"
		call := func(path string, m merchant, wallet uuid.UUID, ip string) response {
			t.Helper()
			body := payoutBody{wallet: wallet.String(), amount: "100000", bank: "bca", account: "1234567890", transferType: "BIFAST"}.json()
			return e.do(request{method: http.MethodPost, path: path, body: body, apiKey: m.apiKey, sign: m.signingSecret,
				headers: map[string]string{"Idempotency-Key": key}, remoteIP: ip})
		}
		state := func() [6]int64 {
			t.Helper()
			hb, hl := e.balance(holdingWallet)
			rb, rl := e.balance(restrictedWallet)
			var n int64
			if err := e.db.Model(&models.Disbursement{}).Where("client_id IN ?", []uuid.UUID{holding.id, restricted.id}).Count(&n).Error; err != nil {
				t.Fatal(err)
			}
			return [6]int64{int64(hb), int64(hl), int64(rb), int64(rl), n, int64(e.vendor.submitsAccepted())}
		}
		before := state()
		for _, c := range []struct {
			name   string
			m      merchant
			wallet uuid.UUID
			ip     string
			msg    string
		}{
			{"holding client", holding, holdingWallet, "", errHoldingClient.Error()},
			{"holding client from anywhere", holding, holdingWallet, "198.51.100.7", errHoldingClient.Error()},
			{"address outside the allow-list", restricted, restrictedWallet, "203.0.113.10", errIPNotAllowed.Error()},
		} {
			for _, path := range []string{"/api/v3/disbursements", "/api/v3/disbursements/quote"} {
				r := call(path, c.m, c.wallet, c.ip)
				r.expect(t, http.StatusForbidden, c.msg)
				if r.header.Get("Idempotent-Replayed") != "" {
					t.Fatalf("%s %s: a refusal carries Idempotent-Replayed", c.name, path)
				}
			}
		}
		if after := state(); after != before {
			t.Fatalf("refused calls changed state: before %v after %v", before, after)
		}

		call("/api/v3/disbursements/quote", restricted, restrictedWallet, "198.51.100.7").expect(t, http.StatusOK, "")
		call("/api/v3/disbursements", restricted, restrictedWallet, "198.51.100.7").created(t, models.StatusSuccess)
		e.wantWallet(restrictedWallet, 900_000, 0)
		e.wantWallet(holdingWallet, 1_000_000, 0)
		e.reconciled()
	})
}
