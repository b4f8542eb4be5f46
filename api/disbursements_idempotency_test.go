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

// Idempotency rules 2 and 3 and the replay of every stored status
// (docs/design.md, Idempotency and replays), as HTTP:
// a replay answers by the stored status (its HTTP status and message),
// always with Idempotent-Replayed: true, and moves no money. The submits
// are held so that each status can be set up. That the service replays
// every status, also while withdrawals are suspended, is
// payouts.TestCreateReplaysByKey.
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

// Rule 4 as HTTP: the same key with another amount is 422 with the spec's
// message and does nothing; a wallet id in capitals (the same UUID as
// parsed) replays the original, and a replay with another memo answers
// the stored memo and reference_id. Each compared field, and that memo
// and reference_id are not compared, is payouts.TestCreateReplaysByKey.
func TestDisbursementReplayParameterMismatch(t *testing.T) {
	t.Parallel()
	forEachQueue(t, payoutSetup{}, func(t *testing.T, e *payoutEnv) {
		original := e.body("100000", "1234567890")
		original.memo, original.referenceID = "first memo", "inv-1"
		first := e.create("key-m", original).created(t, models.StatusSuccess)
		before := e.snapshot()

		changed := func(f func(p *payoutBody)) payoutBody { p := original; f(&p); return p }
		r := e.create("key-m", changed(func(p *payoutBody) { p.amount = "100001" }))
		r.expect(t, http.StatusUnprocessableEntity, mismatchMsg)
		if r.header.Get("Idempotent-Replayed") != "" {
			t.Fatal("a mismatch carries Idempotent-Replayed")
		}
		same := map[string]payoutBody{
			"wallet id in capitals": changed(func(p *payoutBody) { p.wallet = strings.ToUpper(e.wallet.String()) }),
			"another memo":          changed(func(p *payoutBody) { p.memo = "second memo" }),
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

// Rule 6 as HTTP: while withdrawals are suspended, a replay still reaches
// the service and answers as usual, but a fresh create or a quote is 403
// with its message, without Idempotent-Replayed, and stores nothing; once
// active again the same new key works. Replays of every stored status
// while suspended are payouts.TestCreateReplaysByKey.
func TestDisbursementReplayWhileSuspended(t *testing.T) {
	t.Parallel()
	forEachQueue(t, payoutSetup{}, func(t *testing.T, e *payoutEnv) {
		paid := e.body("100000", "1234567890")
		e.create("paid", paid).created(t, models.StatusSuccess)

		e.update(map[string]string{"withdrawals": "suspended"})
		before := e.snapshot()
		e.create("paid", paid).replayed(t, http.StatusOK, "")
		fresh := e.create("new", paid)
		fresh.expect(t, http.StatusForbidden, suspendedMsg)
		if fresh.header.Get("Idempotent-Replayed") != "" {
			t.Fatal("a refused fresh create carries Idempotent-Replayed")
		}
		e.quote(paid).expect(t, http.StatusForbidden, suspendedMsg)
		e.unchanged(before)

		e.update(map[string]string{"withdrawals": "active"})
		e.create("new", paid).created(t, models.StatusSuccess)
		e.wantWallet(e.wallet, 800_000, 0)
		e.reconciled()
	})
}

// Idempotency keys belong to a client, and over HTTP the client is the API
// key's: another client's create with the same key is its own fresh
// disbursement (201), and its replay answers its own. The rest of the rule
// (mismatches across clients, a key never revealing another client's
// disbursement) is payouts.TestIdempotencyKeysArePerClient.
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
		e.wantWallet(e.wallet, 900_000, 0)
		e.wantWallet(theirs, 400_000, 0)
	})
}
