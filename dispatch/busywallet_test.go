package dispatch

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/payouts"
	"github.com/payoutd/payoutd/vendors"
	"github.com/payoutd/payoutd/vendors/sandbox"
)

// One busy wallet in the shape production gives it: creates
// that the API submits inline while the merchant waits, creates left to
// the worker, and the worker's submits and result moves, all at once on
// the same wallet, funded for fewer payouts than are asked for. However
// they interleave, the wallet is never overdrawn (sampled throughout),
// every accepted payout ends once, each paid one has exactly one ledger
// posting and each failed one none, the balance and lock are exactly what
// the paid payouts make them, and the ledger reconciles.
func TestBusyWalletCreatesAndFinalisationsTogether(t *testing.T) {
	t.Parallel()
	const creates, fits = 160, 50
	amount := models.Rupiah(100_000)
	funds := fits * amount
	f := newFixture(t, funds)
	registry := vendors.NewRegistry(sandbox.NewSimBank(sandbox.Options{CompleteAfter: time.Nanosecond}))
	queue := &submitRecorder{}
	api, apiDispatch := New(payouts.Options{DB: f.db, Vendors: registry, SubmitLease: time.Minute, SubmitInline: true, Queue: queue},
		Options{Queue: queue, WaitRecheck: 5 * time.Millisecond})
	worker, _ := New(payouts.Options{DB: f.db, Vendors: registry, SubmitLease: time.Minute},
		Options{Notifier: wakeFunc(func(ids []uuid.UUID) { apiDispatch.Wake(ids...) })})
	ctx := context.Background()

	// Sample the wallet while everything runs: available and lock never
	// below zero.
	stop := make(chan struct{})
	var samples, overdrawn atomic.Int64
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if w := f.walletNow(); w.Available() < 0 || w.Locked < 0 {
				overdrawn.Add(1)
				t.Errorf("wallet overdrawn: balance %s locked %s", w.Balance, w.Locked)
			}
			samples.Add(1)
		}
	}()

	// The worker submits what the API left to it, as its tasks would.
	toWorker := make(chan uuid.UUID, creates)
	var workers sync.WaitGroup
	for range 8 {
		workers.Add(1)
		go func() {
			defer workers.Done()
			for id := range toWorker {
				if err := worker.Submit(ctx, id); err != nil && !errors.Is(err, payouts.ErrOutcomeUnknown) {
					t.Errorf("worker submit %s: %v", id, err)
				}
			}
		}()
	}
	var mu sync.Mutex
	accepted := map[uuid.UUID]bool{}
	var creators sync.WaitGroup
	for i := range creates {
		creators.Add(1)
		go func() {
			defer creators.Done()
			account := "1234567890"
			if i%4 == 0 {
				account = sandbox.AccountSubmitRejected
			}
			waits := i%2 == 0
			created, err := api.Create(ctx, f.client, payouts.CreateRequest{IdempotencyKey: fmt.Sprintf("busy-%d", i), WaitsForSubmit: waits,
				Params: payouts.Params{WalletID: f.wallet.ID, Amount: amount, BankCode: "bca", AccountNo: account, TransferType: models.BIFAST}})
			if errors.Is(err, models.ErrInsufficientBalance) {
				return
			}
			if err != nil {
				t.Errorf("create %d: %v", i, err)
				return
			}
			mu.Lock()
			accepted[created.Disbursement.ID] = true
			mu.Unlock()
			if !waits {
				toWorker <- created.Disbursement.ID
				return
			}
			if _, err := apiDispatch.SubmitAndWait(ctx, created, time.Minute); err != nil {
				t.Errorf("wait %d: %v", i, err)
			}
		}()
	}
	creators.Wait()
	for _, id := range queue.queued() { // what the inline submits left over
		toWorker <- id
	}
	close(toWorker)
	workers.Wait()
	close(stop)
	<-sampled

	if len(accepted) < fits {
		t.Fatalf("%d creates accepted; the wallet covers at least %d", len(accepted), fits)
	}
	paid := models.Amount(0)
	for id := range accepted {
		status := f.statusOf(id)
		postings := f.count("ledger_transactions", "reference = ?", id.String())
		switch status {
		case models.StatusSuccess:
			paid += amount
			if postings != 1 {
				t.Errorf("paid %s has %d ledger postings, want 1", id, postings)
			}
		case models.StatusFailed:
			if postings != 0 {
				t.Errorf("failed %s has %d ledger postings, want 0", id, postings)
			}
		default:
			t.Errorf("%s ended %s, want SUCCESS or FAILED", id, status)
		}
		if n := f.count("disbursement_transitions", "disbursement_id = ? AND to_status = ?", id, status); n != 1 {
			t.Errorf("%s: %d transitions to %s, want 1", id, n, status)
		}
		// The move's one statement per kind (audit with the status, the
		// events, the postings with the wallets) writes each once: one
		// event, numbered 1, and a posting whose entries balance.
		if n := f.count("webhook_events", "subject_id = ? AND sequence = 1", id); n != 1 || f.count("webhook_events", "subject_id = ?", id) != 1 {
			t.Errorf("%s: %d webhook events numbered 1 of %d, want one", id, n, f.count("webhook_events", "subject_id = ?", id))
		}
		var entries struct {
			N   int64
			Sum int64
		}
		if err := f.db.Raw(`SELECT count(*) AS n, COALESCE(sum(e.amount), 0) AS sum FROM ledger_entries e
			JOIN ledger_transactions t ON t.id = e.transaction_id WHERE t.reference = ?`, id.String()).Scan(&entries).Error; err != nil {
			t.Fatal(err)
		}
		if paid := status == models.StatusSuccess; (paid && entries.N < 2) || (!paid && entries.N != 0) || entries.Sum != 0 {
			t.Errorf("%s (%s): %d ledger entries summing to %d, want two or more summing to 0 when paid, none otherwise",
				id, status, entries.N, entries.Sum)
		}
	}
	if w := f.walletNow(); w.Balance != funds-paid || w.Locked != 0 {
		t.Errorf("wallet: balance %s locked %s, want %s and 0", w.Balance, w.Locked, funds-paid)
	}
	if samples.Load() == 0 || overdrawn.Load() > 0 {
		t.Errorf("%d wallet samples, %d overdrawn", samples.Load(), overdrawn.Load())
	}
	t.Logf("%d accepted of %d, %s paid, %d wallet samples", len(accepted), creates, paid.Fixed4(), samples.Load())
	f.reconciled()
}
