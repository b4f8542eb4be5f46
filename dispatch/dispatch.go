// Package dispatch decides when payouts are submitted and status-checked;
// package payouts says what a submit, a status check and a move do. The
// rules never wait on anything here: a committed VERIFIED or REQUESTED row
// with its next_check_at is the truth, and the sweep (the primary path,
// Sweep) carries every such row through by itself. Everything else in this
// package only makes that happen sooner: submit tasks and their batches,
// the submit pumps woken over Redis, the inline submits of the API and
// their waiters. paths.go lists every path, the primary one first.
//
// A Dispatcher is the payout service's payouts.Handoff (New builds the two
// together): after a commit, the rules tell it of a payout due for a
// submit (Due), of a create's payout claimed for an inline submit
// (Claimed) and of the payouts that left VERIFIED (LeftVerified). The
// worker runs its batches and pumps (Run) and hands it the payout tasks
// (Submit, Poll, Sweep); the API waits through it (SubmitAndWait).
package dispatch

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/payoutd/payoutd/internal/groupcommit"
	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/payouts"
)

// Queue hands submits and status checks to the worker as tasks.
// tasks.Client implements it over asynq. A slot distinguishes a later
// enqueue of the same work (a sweep) from a duplicate, which the queue
// ignores.
type Queue interface {
	EnqueueSubmit(ctx context.Context, id uuid.UUID, slot string) error
	EnqueuePoll(ctx context.Context, id uuid.UUID, slot string, after time.Duration) error
}

// Options configure a Dispatcher.
type Options struct {
	// Queue carries submit and status-check tasks; nil (the admin CLI
	// without Redis): nothing is queued, the worker's sweep picks the work
	// up.
	Queue Queue
	// DueSignal, when set, is given instead of a submit task for a payout
	// due for its first submit: the worker's submit pumps (RunSubmitPump)
	// take it from the table. nil: a payout:submit task per payout.
	DueSignal DueSignal
	// Notifier tells the other processes of the moves out of VERIFIED;
	// nil: only this process's waiters are woken.
	Notifier Notifier
	// WaitRecheck is how often a waiting create re-reads its row in case
	// a wake-up was lost; 0 means DefaultWaitRecheck.
	WaitRecheck time.Duration
}

// Dispatcher runs a payout service's submits and status checks.
type Dispatcher struct {
	svc       *payouts.Service
	queue     Queue
	dueSignal DueSignal

	mu        sync.Mutex
	batches   *batcher        // set while RunSubmitBatches runs
	pumpWakes []chan struct{} // set while RunSubmitPump runs

	// waiting are the creates waiting for their submit (SubmitAndWait);
	// notifier tells other processes of the moves out of VERIFIED.
	waiting      waiters
	notifier     Notifier
	inline       *groupcommit.Group[*inlineSubmit]
	waitRecheck  time.Duration
	waitRechecks atomic.Int64
}

var _ payouts.Handoff = (*Dispatcher)(nil)

// New builds the payout service on po with a Dispatcher as its handoff
// (po.Handoff is replaced), and the Dispatcher on it.
func New(po payouts.Options, o Options) (*payouts.Service, *Dispatcher) {
	if o.WaitRecheck <= 0 {
		o.WaitRecheck = DefaultWaitRecheck
	}
	x := &Dispatcher{queue: o.Queue, dueSignal: o.DueSignal, notifier: o.Notifier, waitRecheck: o.WaitRecheck}
	po.Handoff = x
	x.svc = payouts.New(po)
	x.inline = x.newInlineSubmitter()
	return x.svc, x
}

// Payouts is the service the Dispatcher runs.
func (x *Dispatcher) Payouts() *payouts.Service { return x.svc }

// Due is told of a VERIFIED payout due for a submit (payouts.Handoff):
// a payout due for its first submit goes to the worker's pumps by the due
// signal when there is one, any other by a submit task. A failure is only
// logged: the row is committed, and a pump's recheck or the sweep finds
// it later.
func (x *Dispatcher) Due(ctx context.Context, d *models.Disbursement) {
	if x.dueSignal != nil && d.SubmitAttempts == 0 {
		x.dueSignal.SubmitsDue(ctx)
		return
	}
	x.queueSubmitTask(ctx, d)
}

// queueSubmitTask queues a payout:submit task for d.
func (x *Dispatcher) queueSubmitTask(ctx context.Context, d *models.Disbursement) {
	if x.queue == nil {
		return
	}
	if err := x.queue.EnqueueSubmit(ctx, d.ID, ""); err != nil {
		slog.WarnContext(ctx, "enqueue payout:submit failed; the sweep will retry",
			slog.String("disbursement_id", d.ID.String()), slog.Any("error", err))
	}
}

// Submit is the payout:submit task: while RunSubmitBatches runs, a first
// submit goes through a batch (payouts.Service.SubmitFresh), and anything
// else (or with no batch running) through payouts.Service.Submit.
func (x *Dispatcher) Submit(ctx context.Context, id uuid.UUID) error {
	if handled, err := x.submitBatched(ctx, id); handled {
		return err
	}
	return x.svc.Submit(ctx, id)
}

// Poll is the payout:poll task: payouts.Service.Poll, the status check
// (which queues the next one while the payout is in flight).
func (x *Dispatcher) Poll(ctx context.Context, id uuid.UUID) error {
	return x.svc.Poll(ctx, id)
}

// Worker sizes the worker's submit batches and pumps (Run).
type Worker struct {
	// Concurrency is the worker's task concurrency: the most submit tasks
	// one batch takes.
	Concurrency int
	// Paused reports whether an operator paused payout submits; the pumps
	// then take nothing. nil: never.
	Paused Paused
}

// maxPumpBatch is the most fresh payouts one submit pump claims at a time.
const maxPumpBatch = 64

// submitBatchLoops is how many batches of payout submits may be in flight:
// one gathering while another waits on the database or the vendor.
const submitBatchLoops = 2

// Run runs the worker's accelerators until ctx ends: the batch loops that
// submit tasks running at once share (RunSubmitBatches), and the submit
// pumps that take fresh payouts straight from the table (RunSubmitPump).
// It returns once they have stopped. Cancel ctx only after the task
// server has shut down: running submit tasks wait on the batches.
func (x *Dispatcher) Run(ctx context.Context, w Worker) {
	var wg sync.WaitGroup
	wg.Go(func() { x.RunSubmitBatches(ctx, submitBatchLoops, w.Concurrency) })
	wg.Go(func() { x.RunSubmitPump(ctx, submitBatchLoops, maxPumpBatch, w.Paused) })
	wg.Wait()
}
