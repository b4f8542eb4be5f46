package api

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors/sandbox"
)

// Idempotency rules 2 and 3 and DESIGN.md's replay clarification: a replay
// answers by the stored status, always with Idempotent-Replayed: true, and
// moves no money. The submits are held so that each status can be set up.
func TestDisbursementReplayByStoredStatus(t *testing.T) {
	t.Parallel()
	e := setupPayouts(t, payoutSetup{noSubmit: true, submitWait: time.Nanosecond, lockTTL: time.Minute, funds: "10000000"})
	ctx := context.Background()

	// EXPIRED first: its lock runs out while the others are not made yet.
	expired := e.body("100000", "1000000011")
	e.create("expired", expired).created(t, models.StatusVerified)
	e.clock.Advance(time.Minute + time.Second)
	if n := e.expireLocks(); n != 1 {
		t.Fatalf("expired %d", n)
	}
	e.runSubmits() // the held submit of the expired one: a no-op now

	bodies := map[string]payoutBody{
		"success":   e.body("100000", "1000000012"),
		"requested": e.body("100000", sandbox.AccountStaysRequested),
		"failed":    e.body("100000", sandbox.AccountSubmitRejected),
		"verified":  e.body("100000", "1000000013"),
		"cancelled": e.body("100000", "1000000014"),
	}
	ids := map[string]string{}
	for _, key := range []string{"success", "requested", "failed"} {
		ids[key] = e.create(key, bodies[key]).created(t, models.StatusVerified).ID
	}
	e.runSubmits()
	ids["verified"] = e.create("verified", bodies["verified"]).created(t, models.StatusVerified).ID
	ids["cancelled"] = e.create("cancelled", bodies["cancelled"]).created(t, models.StatusVerified).ID
	if _, err := e.svc.Cancel(ctx, uuid.MustParse(ids["cancelled"]), "test"); err != nil {
		t.Fatal(err)
	}
	e.update(map[string]string{"review-threshold": "5000000"})
	bodies["pending"] = e.body("5000000", "1000000015")
	ids["pending"] = e.create("pending", bodies["pending"]).created(t, models.StatusPendingVerification).ID
	bodies["expired"] = expired

	before := e.snapshot()
	cases := []struct {
		key    string
		status int
		msg    string
		stored models.DisbursementStatus
	}{
		{"success", http.StatusOK, "", models.StatusSuccess},
		{"requested", http.StatusOK, "", models.StatusRequested},
		{"verified", http.StatusOK, "", models.StatusVerified},
		{"pending", http.StatusOK, "", models.StatusPendingVerification},
		{"failed", http.StatusServiceUnavailable, "Vendor payout request failed", models.StatusFailed},
		{"expired", http.StatusGone, "Withdrawal lock has expired", models.StatusExpired},
		{"cancelled", http.StatusConflict, "disbursement was cancelled", models.StatusCancelled},
	}
	// Rule 6: while withdrawals are suspended, every stored status still
	// replays as it does otherwise.
	e.update(map[string]string{"withdrawals": "suspended"})
	for _, tc := range cases {
		e.create(tc.key, bodies[tc.key]).replayed(t, tc.status, tc.msg)
	}
	e.update(map[string]string{"withdrawals": "active"})
	for _, tc := range cases {
		t.Run(tc.key, func(t *testing.T) {
			t.Parallel()
			e := e.sub(t)
			for i := 0; i < 2; i++ { // a replay of a replay answers the same
				r := e.create(tc.key, bodies[tc.key])
				r.replayed(t, tc.status, tc.msg)
				if tc.status != http.StatusOK {
					continue
				}
				d := r.disbursement(t)
				if d.Status != string(tc.stored) || d.ID != ids[tc.key] || d.IdempotencyKey != tc.key || d.Amount != bodies[tc.key].amount {
					t.Fatalf("replay body %s", r.body)
				}
			}
			if got := e.byKey(tc.key).Status; got != tc.stored {
				t.Fatalf("stored %s, want %s", got, tc.stored)
			}
		})
	}
	t.Cleanup(func() {
		if t.Failed() {
			return
		}
		e.unchanged(before)
		// In flight: requested, verified, pending. Paid: success.
		e.wantWallet(e.wallet, 10_000_000-100_000, 100_000+100_000+5_000_000)
	})
}

// Rule 4: the same key with any compared field changed is 422 and does
// nothing; the forms that normalise to the same parameters, and memo and
// reference_id, which are not compared, replay the original.
func TestDisbursementReplayParameterMismatch(t *testing.T) {
	t.Parallel()
	forEachQueue(t, payoutSetup{}, func(t *testing.T, e *payoutEnv) {
		original := e.body("100000", "1234567890")
		original.memo, original.referenceID = "first memo", "inv-1"
		first := e.create("key-m", original).created(t, models.StatusSuccess)
		before := e.snapshot()

		changed := func(f func(p *payoutBody)) payoutBody { p := original; f(&p); return p }
		mismatches := map[string]payoutBody{
			"client_wallet_id":        changed(func(p *payoutBody) { p.wallet = e.ewallet.String() }),
			"amount":                  changed(func(p *payoutBody) { p.amount = "100001" }),
			"bank_code":               changed(func(p *payoutBody) { p.bank = "bri" }),
			"account_no":              changed(func(p *payoutBody) { p.account = "1234567891" }),
			"transfer_type":           changed(func(p *payoutBody) { p.transferType = "RTOL" }),
			"account_no zero-padded":  changed(func(p *payoutBody) { p.account = "01234567890" }),
			"amount and memo changed": changed(func(p *payoutBody) { p.amount = "200000"; p.memo = "other" }),
		}
		for name, p := range mismatches {
			t.Run("mismatch/"+name, func(t *testing.T) {
				t.Parallel()
				r := e.sub(t).create("key-m", p)
				r.expect(t, http.StatusUnprocessableEntity, mismatchMsg)
			})
		}
		same := map[string]payoutBody{
			"amount with scale":        changed(func(p *payoutBody) { p.amount = "100000.0000" }),
			"wallet id in capitals":    changed(func(p *payoutBody) { p.wallet = strings.ToUpper(e.wallet.String()) }),
			"bank_code in capitals":    changed(func(p *payoutBody) { p.bank = "BcA" }),
			"account_no with spaces":   changed(func(p *payoutBody) { p.account = "  1234567890\t" }),
			"another memo":             changed(func(p *payoutBody) { p.memo = "second memo" }),
			"no memo, no reference_id": changed(func(p *payoutBody) { p.memo, p.referenceID = "", "" }),
			"another reference_id":     changed(func(p *payoutBody) { p.referenceID = "inv-2" }),
		}
		for name, p := range same {
			t.Run("same/"+name, func(t *testing.T) {
				t.Parallel()
				r := e.sub(t).create("key-m", p)
				r.replayed(t, http.StatusOK, "")
				d := r.disbursement(t)
				// The stored disbursement, not the replay's memo or reference.
				if d.ID != first.ID || d.Status != "SUCCESS" || d.Memo == nil || *d.Memo != "first memo" ||
					d.ReferenceID == nil || *d.ReferenceID != "inv-1" || d.Amount != "100000" || d.AccountNo != "1234567890" {
					t.Fatalf("replay %s", r.body)
				}
			})
		}
		t.Cleanup(func() {
			if !t.Failed() {
				e.unchanged(before)
				e.wantWallet(e.wallet, 900_000, 0)
			}
		})
	})
}

// Rule 6: while withdrawals are suspended, replays of existing
// disbursements still answer as usual (and a mismatch is still 422), but a
// fresh create or a quote is 403 and stores nothing; once active again the
// same new key works.
func TestDisbursementReplayWhileSuspended(t *testing.T) {
	t.Parallel()
	forEachQueue(t, payoutSetup{}, func(t *testing.T, e *payoutEnv) {
		paid := e.body("100000", "1234567890")
		e.create("paid", paid).created(t, models.StatusSuccess)
		inFlight := e.body("100000", sandbox.AccountStaysRequested)
		e.create("in-flight", inFlight).created(t, models.StatusRequested)
		rejected := e.body("100000", sandbox.AccountSubmitRejected)
		e.create("rejected", rejected).expect(t, http.StatusServiceUnavailable, "Vendor payout request failed")

		e.update(map[string]string{"withdrawals": "suspended"})
		before := e.snapshot()
		e.create("paid", paid).replayed(t, http.StatusOK, "")
		e.create("in-flight", inFlight).replayed(t, http.StatusOK, "")
		e.create("rejected", rejected).replayed(t, http.StatusServiceUnavailable, "Vendor payout request failed")
		e.create("paid", e.body("100001", "1234567890")).expect(t, http.StatusUnprocessableEntity, mismatchMsg)
		fresh := e.create("new", paid)
		fresh.expect(t, http.StatusForbidden, suspendedMsg)
		if fresh.header.Get("Idempotent-Replayed") != "" {
			t.Fatal("a refused fresh create carries Idempotent-Replayed")
		}
		e.quote(paid).expect(t, http.StatusForbidden, suspendedMsg)
		e.unchanged(before)

		e.update(map[string]string{"withdrawals": "active"})
		e.create("new", paid).created(t, models.StatusSuccess)
		e.wantWallet(e.wallet, 800_000, 100_000)
		e.reconciled()
	})
}

// Idempotency keys belong to a client: another client's create with the
// same key is its own fresh disbursement, and each replay finds its own.
func TestDisbursementKeysArePerClient(t *testing.T) {
	t.Parallel()
	forEachQueue(t, payoutSetup{}, func(t *testing.T, e *payoutEnv) {
		other := e.newMerchant()
		theirs := e.newWallet(other.id, "Theirs", sandbox.SimBank, false)
		e.fund(theirs, "500000")
		theirBody := payoutBody{wallet: theirs.String(), amount: "100000", bank: "bca", account: "1234567890", transferType: "BIFAST"}

		mine := e.create("shared-key", e.body("100000", "1234567890")).created(t, models.StatusSuccess)
		their := e.createAs(other, "shared-key", theirBody).created(t, models.StatusSuccess)
		if mine.ID == their.ID || their.ClientID != other.id.String() || their.WalletID != theirs.String() {
			t.Fatalf("mine %+v\ntheirs %+v", mine, their)
		}
		r := e.createAs(other, "shared-key", theirBody)
		r.replayed(t, http.StatusOK, "")
		if r.disbursement(t).ID != their.ID {
			t.Fatalf("their replay answered %s", r.body)
		}
		r = e.create("shared-key", e.body("100000", "1234567890"))
		r.replayed(t, http.StatusOK, "")
		if r.disbursement(t).ID != mine.ID {
			t.Fatalf("my replay answered %s", r.body)
		}
		// Their parameters under my key are a mismatch with my disbursement,
		// and do not reveal theirs.
		e.create("shared-key", theirBody).expect(t, http.StatusUnprocessableEntity, mismatchMsg)
		e.wantWallet(e.wallet, 900_000, 0)
		e.wantWallet(theirs, 400_000, 0)
		e.reconciled()
	})
}

// A key's disbursement outlives its wallet's usability: once the wallet is
// no longer active, a replay still answers and a mismatch is still 422,
// while a fresh key on that wallet is 404. A key reused with a wallet the
// client does not have is a mismatch, not a 404.
func TestDisbursementReplayOutlivesItsWallet(t *testing.T) {
	t.Parallel()
	forEachQueue(t, payoutSetup{}, func(t *testing.T, e *payoutEnv) {
		paid := e.body("100000", "1234567890")
		first := e.create("paid", paid).created(t, models.StatusSuccess)
		unknownWallet := paid
		unknownWallet.wallet = "0b7e7a52-3c1d-4f4e-8a55-2d9e1c0b7a11"
		e.create("paid", unknownWallet).expect(t, http.StatusUnprocessableEntity, mismatchMsg)

		if err := e.db.Exec(`UPDATE wallets SET state = ? WHERE id = ?`, models.WalletProvisioning, e.wallet).Error; err != nil {
			t.Fatal(err)
		}
		before := e.snapshot()
		r := e.create("paid", paid)
		r.replayed(t, http.StatusOK, "")
		if r.disbursement(t).ID != first.ID {
			t.Fatalf("replay answered %s", r.body)
		}
		e.create("paid", e.body("100001", "1234567890")).expect(t, http.StatusUnprocessableEntity, mismatchMsg)
		e.create("fresh", paid).expect(t, http.StatusNotFound, "wallet not found")
		e.unchanged(before)
	})
}
