package api

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"
	"gorm.io/gorm"

	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/tasks"
	"github.com/payoutd/payoutd/vendors"
	"github.com/payoutd/payoutd/vendors/sandbox"
	"github.com/payoutd/payoutd/vendors/snap"
	"github.com/payoutd/payoutd/vendors/snap/snapsim"
)

// snapSim is a simulated SNAP bank (bca) on a real socket and the adapter
// that talks to it, as the registry of a configured SNAP_BANKS=bca builds
// it: transfers kept in the database, the bank's public key verifying its
// notifications.
type snapSim struct {
	bank    *snapsim.Bank
	vendor  *snap.Vendor
	bankKey *rsa.PrivateKey
}

// Credentials of the simulated bank (test values, not secrets).
const snapClientKey, snapClientSecret, snapPartnerID, snapSource = "apitest-client-key", "apitest-client-secret", "APITESTPARTNER", "8880001111"

var (
	snapKeysOnce              sync.Once
	snapPlatformKey, snapBank *rsa.PrivateKey
)

// snapTestKeys are a platform key and a bank key made once per test
// binary: 2048-bit keys take a while to make under -race.
func snapTestKeys(t *testing.T) (platform, bank *rsa.PrivateKey) {
	t.Helper()
	snapKeysOnce.Do(func() {
		var err error
		if snapPlatformKey, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
			panic(err)
		}
		if snapBank, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
			panic(err)
		}
	})
	return snapPlatformKey, snapBank
}

// newSnapSim serves snapsim and runs its notifications towards the API
// handler apiHandler will hold.
func newSnapSim(t *testing.T, db *gorm.DB, clock *testClock, completeAfter time.Duration, apiHandler *atomic.Value) *snapSim {
	t.Helper()
	platform, bankKey := snapTestKeys(t)
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h, _ := apiHandler.Load().(http.Handler)
		if h == nil {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(api.Close)
	bank := snapsim.New(snapsim.Options{PartnerPublicKey: &platform.PublicKey, ClientKey: snapClientKey, ClientSecret: snapClientSecret,
		PartnerID: snapPartnerID, SourceAccountNo: snapSource, Now: clock.Now, CompleteAfter: completeAfter,
		BankPrivateKey: bankKey, CallbackURL: api.URL + snap.CallbackPath("bca")})
	ts := httptest.NewServer(bank)
	t.Cleanup(ts.Close)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- bank.Run(ctx, 20*time.Millisecond) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("snapsim: %v", err)
		}
	})
	v, err := snap.New(snap.Options{Bank: "bca", BaseURL: ts.URL, PartnerID: snapPartnerID, ClientKey: snapClientKey,
		ClientSecret: snapClientSecret, ChannelID: "95221", SourceAccountNo: snapSource, PrivateKey: platform,
		BankPublicKey: &bankKey.PublicKey, Notifications: true, Store: snap.NewDBStore(db, "bca"), Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	return &snapSim{bank: bank, vendor: v, bankKey: bankKey}
}

// SNAP BI end to end: the api and a real worker against a simulated bank
// over HTTP, its signed notifications reaching POST
// /vendor-callbacks/snap/bca on a real socket, on the test database.
func TestSnapOverHTTP(t *testing.T) {
	t.Parallel()
	e := workerSetup(t, payoutSetup{snap: true, completeAfter: 300 * time.Millisecond})
	started := time.Now()
	sbody := func(account string) payoutBody {
		return payoutBody{wallet: e.swallet.String(), amount: "100000", bank: "bri", account: account, transferType: "BIFAST"}
	}
	ref := func(id string) string { return models.VendorReferenceFor(uuid.MustParse(id)) }
	create := func(key, account string) string {
		t.Helper()
		r := e.create(key, sbody(account))
		if r.status/100 != 2 {
			t.Fatalf("create %s: %d %s", key, r.status, r.body)
		}
		return r.disbursement(t).ID
	}

	// Quote: the holder name comes from the external account inquiry.
	q := e.quote(sbody("1234567890"))
	if q.status != http.StatusOK {
		t.Fatalf("quote: %d %s", q.status, q.body)
	}
	if d := q.disbursement(t); d.AccountHolderName != "SANDBOX 7890" {
		t.Errorf("quote holder name %q, want the bank's SANDBOX 7890", d.AccountHolderName)
	}

	okID := create("snap-ok", "1234567890")
	failedID := create("snap-fail", sandbox.AccountFailsLater)
	lostID := create("snap-lost", sandbox.AccountFirstSubmitLost)
	retID := create("snap-ret", sandbox.AccountReturnedLater)
	e.eventually(okID, models.StatusSuccess)
	e.eventually(failedID, models.StatusFailed)
	// The first answer lost: the status inquiry finds the transfer, which
	// the bank made once.
	e.eventually(lostID, models.StatusSuccess)
	if n := e.snap.bank.SubmitCalls(ref(lostID)); n != 1 {
		t.Errorf("the lost-answer transfer reached the bank %d times, want 1", n)
	}
	// Paid, then 04 Refunded: RETURNED, money back without the fee.
	e.eventually(retID, models.StatusReturned)
	t.Logf("success, failure, lost answer and return done after %v", time.Since(started))

	// The bank revokes every token: the next call's 401 fetches one new
	// token, and the payout goes through.
	tokens := e.snap.bank.TokenCalls()
	e.snap.bank.RevokeTokens()
	afterRevoke := create("snap-revoked", "2345678901")
	e.eventually(afterRevoke, models.StatusSuccess)
	if n := e.snap.bank.TokenCalls() - tokens; n != 1 {
		t.Errorf("%d tokens fetched after the revocation, want 1", n)
	}

	e.snapNotifications(t, create("snap-stuck", sandbox.AccountStaysRequested))

	// Money: five payouts spent (success, lost answer, after revocation,
	// completed by notification), the failure back whole, the return back
	// without its fee (refund-fee-on-return is off by default).
	balance, locked := e.balance(e.swallet)
	if balance != models.Rupiah(597_500) || locked != 0 {
		t.Errorf("snap wallet: balance %s locked %s, want 597500 and 0", balance, locked)
	}
	// What each transfer sent is in the database, for every process.
	var kept int64
	if err := e.db.Raw("SELECT COUNT(*) FROM snap_transfers WHERE bank = 'bca'").Scan(&kept).Error; err != nil || kept != 6 {
		t.Errorf("snap_transfers holds %d transfers (%v), want the 6 sent", kept, err)
	}
	e.reconciled()
	t.Logf("done after %v", time.Since(started))
}

// snapNotifications: with the worker's queue paused (no poll can move
// anything), a payout that stays pending at the bank is moved by the
// bank's notification alone; a forged notification gets 401 and one the
// status inquiry does not confirm changes nothing.
func (e *payoutEnv) snapNotifications(t *testing.T, stuckID string) {
	t.Helper()
	reference := models.VendorReferenceFor(uuid.MustParse(stuckID))
	e.eventually(stuckID, models.StatusRequested)
	inspector := asynq.NewInspector(e.queueOpt)
	t.Cleanup(func() { inspector.Close() })
	queue := e.queuePrefix + tasks.QueueCritical
	if err := inspector.PauseQueue(queue); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := inspector.UnpauseQueue(queue); err != nil {
			t.Error(err)
		}
	}()
	// A poll already running when the queue paused finishes first.
	deadline := time.Now().Add(20 * time.Second)
	for active, err := inspector.ListActiveTasks(queue); err != nil || len(active) > 0; active, err = inspector.ListActiveTasks(queue) {
		if time.Now().After(deadline) {
			t.Fatalf("tasks still active on the paused queue: %d, %v", len(active), err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	claim, _ := json.Marshal(snap.Notification{OriginalPartnerReferenceNo: reference, OriginalExternalID: snap.TransferExternalID(reference),
		LatestTransactionStatus: "00", TransactionStatusDesc: "Success"})
	ts := snap.Timestamp(e.clock.Now())
	other, _ := snapTestKeys(t) // the platform's key: not the bank's
	forgedSig, err := snap.SignNotify(other, http.MethodPost, "/vendor-callbacks/snap:bca", claim, ts)
	if err != nil {
		t.Fatal(err)
	}
	forged := e.do(request{method: http.MethodPost, path: "/vendor-callbacks/snap:bca", body: claim,
		headers: map[string]string{"X-SIGNATURE": forgedSig, "X-TIMESTAMP": ts, "Content-Type": "application/json"}})
	if forged.status != http.StatusUnauthorized {
		t.Errorf("forged notification: %d %s, want 401", forged.status, forged.body)
	}
	// Signed by the bank's key, but ten minutes old: a replay.
	old := snap.Timestamp(e.clock.Now().Add(-10 * time.Minute))
	staleSig, err := snap.SignNotify(e.snap.bankKey, http.MethodPost, "/vendor-callbacks/snap:bca", claim, old)
	if err != nil {
		t.Fatal(err)
	}
	stale := e.do(request{method: http.MethodPost, path: "/vendor-callbacks/snap:bca", body: claim,
		headers: map[string]string{"X-SIGNATURE": staleSig, "X-TIMESTAMP": old, "Content-Type": "application/json"}})
	if stale.status != http.StatusUnauthorized {
		t.Errorf("stale notification: %d %s, want 401", stale.status, stale.body)
	}
	// Signed by the bank's key, but the bank's status inquiry says 03.
	if err := e.snap.bank.Notify(context.Background(), claim); err != nil {
		t.Errorf("genuine notification the status does not confirm: %v", err)
	}
	if got := e.status(stuckID); got != models.StatusRequested {
		t.Errorf("after notifications the bank does not confirm: %s, want REQUESTED", got)
	}
	// Completed at the bank: its notification, not a poll, moves it.
	if err := e.snap.bank.Complete(reference, vendors.PayoutSuccess, ""); err != nil {
		t.Fatal(err)
	}
	e.eventually(stuckID, models.StatusSuccess)
}

// A SNAP bank's notifications come to /vendor-callbacks/snap/bca, the
// path to register at a bank's portal (no colon), or to the first one,
// /vendor-callbacks/snap:bca. Each is verified over the path it came on:
// one signed by the bank for the other path is refused 401.
func TestSnapNotificationPaths(t *testing.T) {
	t.Parallel()
	e := setupPayouts(t, payoutSetup{snap: true})
	r := e.create("snap-paths", payoutBody{wallet: e.swallet.String(), amount: "100000", bank: "bri",
		account: sandbox.AccountStaysRequested, transferType: "BIFAST"})
	if r.status/100 != 2 {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	id := r.disbursement(t).ID
	if got := e.status(id); got != models.StatusRequested {
		t.Fatalf("created: %s, want REQUESTED", got)
	}
	reference := models.VendorReferenceFor(uuid.MustParse(id))
	claim, _ := json.Marshal(snap.Notification{OriginalPartnerReferenceNo: reference, OriginalExternalID: snap.TransferExternalID(reference),
		LatestTransactionStatus: "00", TransactionStatusDesc: "Success"})
	post := func(signedFor, postedTo string) response {
		t.Helper()
		ts := snap.Timestamp(e.clock.Now())
		sig, err := snap.SignNotify(e.snap.bankKey, http.MethodPost, signedFor, claim, ts)
		if err != nil {
			t.Fatal(err)
		}
		return e.do(request{method: http.MethodPost, path: postedTo, body: claim,
			headers: map[string]string{"X-SIGNATURE": sig, "X-TIMESTAMP": ts}})
	}
	colonFree, first := "/vendor-callbacks/snap/bca", "/vendor-callbacks/snap:bca"
	if colonFree != snap.CallbackPath("bca") {
		t.Fatalf("snap.CallbackPath = %s", snap.CallbackPath("bca"))
	}
	post(colonFree, first).expect(t, http.StatusUnauthorized, vendors.ErrInvalidCallback.Error())
	post(first, colonFree).expect(t, http.StatusUnauthorized, vendors.ErrInvalidCallback.Error())
	post("/vendor-callbacks/snap/bri", "/vendor-callbacks/snap/bri").expect(t, http.StatusNotFound, models.ErrNotFound.Error())
	// Verified on either path; the bank's status inquiry still says 03.
	post(first, first).expect(t, http.StatusOK, "")
	post(colonFree, colonFree).expect(t, http.StatusOK, "")
	if got := e.status(id); got != models.StatusRequested {
		t.Fatalf("after notifications the bank does not confirm: %s, want REQUESTED", got)
	}
	// Paid at the bank: its notification on the colon-free path pays it.
	if err := e.snap.bank.Complete(reference, vendors.PayoutSuccess, ""); err != nil {
		t.Fatal(err)
	}
	post(colonFree, colonFree).expect(t, http.StatusOK, "")
	if got := e.status(id); got != models.StatusSuccess {
		t.Errorf("after the bank's confirmed notification: %s, want SUCCESS", got)
	}
}
