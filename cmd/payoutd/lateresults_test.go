package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/payoutd/payoutd/internal/testenv"
	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/signature"
	"github.com/payoutd/payoutd/vendors"
	"github.com/payoutd/payoutd/vendors/sandbox"
	"github.com/payoutd/payoutd/vendors/vendorsim"
	"github.com/payoutd/payoutd/worker"
)

// flippingStore is the simulator's store with a vendor that contradicts
// itself: once flipped, a payout's final status reads as something else.
type flippingStore struct {
	*sandbox.MemoryStore
	mu      sync.Mutex
	flipped map[string][2]string // reference → status, reason
}

func (f *flippingStore) flip(reference string, status vendors.PayoutStatus, reason string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.flipped[reference] = [2]string{string(status), reason}
}

func (f *flippingStore) Get(ctx context.Context, reference string) (sandbox.Record, error) {
	rec, err := f.MemoryStore.Get(ctx, reference)
	f.mu.Lock()
	defer f.mu.Unlock()
	if to, ok := f.flipped[reference]; ok && err == nil {
		rec.FinalStatus, rec.FailureReason = vendors.PayoutStatus(to[0]), to[1]
	}
	return rec, err
}

// A vendor result that contradicts a final payout, over the real
// simulator: its signed callback is answered 200 but the payout, the
// wallet and the merchant's webhooks stay as they were; the contradiction
// is recorded once per reported status (counted on repeats), listed by
// `admin disbursement late-results`, makes `admin reconcile` exit 3 until
// an operator resolves it. Both ways: FAILED after SUCCESS (the merchant
// would be refunded money the bank may have paid) and SUCCESS after FAILED
// (money sent with no debit).
func TestContradictingVendorResultIsRecordedNotApplied(t *testing.T) {
	t.Parallel()
	rdb, _ := testenv.Redis(t)
	opt, prefix := testenv.Queue(t, rdb)
	ro := rdb.Options()
	store := &flippingStore{MemoryStore: sandbox.NewMemoryStore(), flipped: map[string][2]string{}}
	s := newStack(t, stackOptions{redisURL: fmt.Sprintf("redis://%s/%d", ro.Addr, ro.DB), queuePrefix: prefix,
		completeWait: 100 * time.Millisecond, callbacks: true, store: store})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- worker.Run(ctx, worker.Deps{DB: s.db, Redis: opt, Dispatch: s.dispatch, QueuePrefix: prefix, Concurrency: 4})
	}()
	t.Cleanup(func() { cancel(); <-done })
	c := &cli{t: t, env: map[string]string{"DATABASE_URL": s.dbURL, "SECRETS_KEY": s.secretsKey, "APP_ENV": "staging"}}

	ids := map[string]string{}
	for _, account := range []string{"1234567890", sandbox.AccountFailsLater} {
		code, body := s.create("late-"+account, account)
		if code != http.StatusCreated {
			t.Fatalf("create %s: %d %v", account, code, body)
		}
		ids[account] = body["id"].(string)
	}
	status := func(account string) models.DisbursementStatus {
		d, _ := s.svc.Get(context.Background(), uuid.MustParse(ids[account]))
		return d.Status
	}
	s.waitFor("one paid, one failed", 30*time.Second, func() bool {
		return status("1234567890") == models.StatusSuccess && status(sandbox.AccountFailsLater) == models.StatusFailed
	})
	if r := c.run("reconcile"); r.code != 0 {
		t.Fatalf("reconcile before: exit %d %s", r.code, r.stdout)
	}
	balance := func() (models.Amount, models.Amount) {
		w, _ := models.NewStore(s.db).FindWallet(context.Background(), s.wallet)
		return w.Balance, w.Locked
	}
	events := func() int64 {
		var n int64
		s.db.Model(&models.WebhookEvent{}).Count(&n)
		return n
	}
	wantBalance, wantEvents := models.Rupiah(100_000_000-20_000), events()
	callback := func(account string, st vendors.PayoutStatus, reason string) {
		t.Helper()
		ref := models.VendorReferenceFor(uuid.MustParse(ids[account]))
		body, _ := json.Marshal(map[string]string{"reference": ref, "status": string(st), "failure_reason": reason})
		req, _ := http.NewRequest(http.MethodPost, s.apiURL+"/vendor-callbacks/simbank", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(vendorsim.SignatureHeader, signature.Sign(simCallbackSecret, body, time.Now()))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("callback %s %s: %d, want 200", account, st, resp.StatusCode)
		}
	}

	// The bank takes back the paid transfer and the vendor now says FAILED.
	store.flip(models.VendorReferenceFor(uuid.MustParse(ids["1234567890"])), vendors.PayoutFailed, "recipient bank returned the transfer")
	callback("1234567890", vendors.PayoutFailed, "recipient bank returned the transfer")
	callback("1234567890", vendors.PayoutFailed, "recipient bank returned the transfer") // the vendor retries
	// A failed payout the vendor now says it paid.
	store.flip(models.VendorReferenceFor(uuid.MustParse(ids[sandbox.AccountFailsLater])), vendors.PayoutSuccess, "")
	callback(sandbox.AccountFailsLater, vendors.PayoutSuccess, "")

	if status("1234567890") != models.StatusSuccess || status(sandbox.AccountFailsLater) != models.StatusFailed {
		t.Fatalf("statuses %s and %s after contradicting results, want SUCCESS and FAILED",
			status("1234567890"), status(sandbox.AccountFailsLater))
	}
	if b, l := balance(); b != wantBalance || l != 0 {
		t.Fatalf("wallet balance %s locked %s, want %s and 0: a contradicting result moved money", b, l, wantBalance)
	}
	if n := events(); n != wantEvents {
		t.Fatalf("%d webhook events, were %d", n, wantEvents)
	}

	r := c.run("reconcile")
	if r.code != 3 || r.json["ok"] != false {
		t.Fatalf("reconcile with unresolved contradictions: exit %d %s, want 3", r.code, r.stdout)
	}
	problems := fmt.Sprint(r.json["problems"])
	for _, id := range ids {
		if !strings.Contains(problems, id) {
			t.Errorf("reconcile problems do not name %s: %s", id, problems)
		}
	}

	listed := c.ok("disbursement", "late-results")
	results, _ := listed["late_results"].([]any)
	if len(results) != 2 {
		t.Fatalf("late-results lists %d, want 2: %v", len(results), listed)
	}
	byID := map[string]map[string]any{}
	for _, x := range results {
		m := x.(map[string]any)
		byID[m["disbursement_id"].(string)] = m
	}
	paid, failed := byID[ids["1234567890"]], byID[ids[sandbox.AccountFailsLater]]
	if paid == nil || paid["stored_status"] != "SUCCESS" || paid["reported_status"] != "FAILED" || paid["source"] != "callback" ||
		paid["seen_count"] != float64(2) || paid["reason"] != "recipient bank returned the transfer" || paid["vendor"] != "simbank" ||
		paid["resolved_at"] != nil {
		t.Errorf("FAILED after SUCCESS listed as %v", paid)
	}
	if failed == nil || failed["stored_status"] != "FAILED" || failed["reported_status"] != "SUCCESS" || failed["seen_count"] != float64(1) {
		t.Errorf("SUCCESS after FAILED listed as %v", failed)
	}

	for _, m := range results {
		id := fmt.Sprint(m.(map[string]any)["id"])
		got := c.ok("disbursement", "resolve-late-result", "--id", id, "--note", "checked with the vendor by phone")
		if got["resolved_at"] == nil || got["note"] != "checked with the vendor by phone" || got["resolved_by"] == "" {
			t.Errorf("resolve printed %v", got)
		}
		if msg := c.fails(1, "disbursement", "resolve-late-result", "--id", id, "--note", "again"); !strings.Contains(msg, "already resolved") {
			t.Errorf("resolving twice: %q", msg)
		}
	}
	if r := c.run("reconcile"); r.code != 0 {
		t.Fatalf("reconcile after resolving: exit %d %s", r.code, r.stdout)
	}
	if open := c.ok("disbursement", "late-results")["late_results"].([]any); len(open) != 0 {
		t.Errorf("late-results after resolving lists %v", open)
	}
	if all := c.ok("disbursement", "late-results", "--all")["late_results"].([]any); len(all) != 2 {
		t.Errorf("late-results --all lists %d, want 2", len(all))
	}
	if b, l := balance(); b != wantBalance || l != 0 {
		t.Fatalf("wallet balance %s locked %s after resolving, want %s", b, l, wantBalance)
	}
}
