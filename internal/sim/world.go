package sim

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/payoutd/payoutd/dispatch"
	"github.com/payoutd/payoutd/internal/credentials"
	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/payments"
	"github.com/payoutd/payoutd/payouts"
	"github.com/payoutd/payoutd/vendors"
	"github.com/payoutd/payoutd/webhooks"
)

// proc is a process of the service: "api", "worker" or "operator". A
// crash bumps its epoch and rebuilds its in-memory state from nothing;
// only what it committed survives.
type proc struct {
	w     *World
	name  string
	epoch int
	svc   *payouts.Service
	disp  *dispatch.Dispatcher // the worker's: its sweep and task handlers
	hooks *webhooks.Deliverer  // the worker's webhook deliveries
	pay   *payments.Service
	// claimed are the payouts an API create stored with their first
	// submit claimed, waiting for this process's inline submit.
	claimed []*models.Disbursement
}

// build makes the process's services afresh, as a start does.
func (p *proc) build() {
	w := p.w
	opts := payouts.Options{DB: w.db, Vendors: vendors.NewRegistry(w.vendor), Queue: w.queue, Now: w.clock.Now}
	p.pay = payments.New(payments.Options{DB: w.db, Acquirer: w.acquirerAPI, Queue: w.queue, Now: w.clock.Now})
	switch p.name {
	case "worker":
		p.svc, p.disp = dispatch.New(opts, dispatch.Options{Queue: w.queue})
		p.hooks = webhooks.New(webhooks.Options{DB: w.db, Sealer: w.sealer, Queue: w.queue, Now: w.clock.Now,
			HTTPClient: &http.Client{Transport: w.merchant}})
	case "api":
		opts.SubmitInline = true
		opts.Handoff = handoff{p}
		p.svc = payouts.New(opts)
	default:
		opts.Handoff = handoff{p}
		p.svc = payouts.New(opts)
	}
	p.claimed = nil
}

// handoff is what dispatch does for the API and the operator's CLI,
// reduced to steps: a payout due for a submit gets a submit task, and a
// create's claimed first submit waits for the process's inline-submit
// step (dispatch's inline batch, which runs SubmitClaimed and queues what
// it leaves).
type handoff struct{ p *proc }

func (h handoff) Due(ctx context.Context, d *models.Disbursement) {
	_ = h.p.w.queue.EnqueueSubmit(ctx, d.ID, "")
}

func (h handoff) Claimed(d *models.Disbursement) any {
	if o := h.p.w.sched.current(); o != nil && o.dead() {
		return nil // a dead process's memory is gone
	}
	cp := *d
	h.p.claimed = append(h.p.claimed, &cp)
	return nil
}

func (h handoff) LeftVerified(context.Context, []uuid.UUID) {}

// World is one simulation run: its seed, its generator, its clock, its
// database, its vendor, its queue and its processes.
type World struct {
	seed     uint64
	cfg      Config
	rng      *rand.Rand
	clock    *clock
	db       *gorm.DB
	sched    *scheduler
	vendor   *vendor
	queue    *queue
	merchant *merchant
	sealer   *credentials.Sealer
	// acquirerAPI issues the QRIS codes (the sandbox acquirer); acquirer
	// is what it knows of each payment.
	acquirerAPI vendors.Acquirer
	acquirer    []*acquired

	api, worker, operator *proc
	client                *models.Client
	wallets               []uuid.UUID

	step    int
	quiet   bool // faults off: the liveness phase
	history []string
	names   map[string]string
	creates []createReq // every create sent, for merchants' retries
	// lastTransition is the last audit line check has judged.
	lastTransition int64
}

// chance draws true with probability p (never while quiet, for faults).
func (w *World) chance(p float64) bool {
	if w.quiet || p <= 0 {
		return false
	}
	return w.rng.Float64() < p
}

// logf appends a line to the history: the step, the simulated time since
// the start, what happened.
func (w *World) logf(format string, args ...any) {
	w.history = append(w.history, fmt.Sprintf("%5d %12s  %s", w.step, w.clock.since(), fmt.Sprintf(format, args...)))
}

// name is the short, stable name of a disbursement id or vendor reference
// in the history (p1, p2, … in order of first mention): ids are random
// bytes of the seed's generator, names read better.
func (w *World) name(idOrRef string) string {
	id := strings.TrimPrefix(idOrRef, "pd-")
	if n, ok := w.names[id]; ok {
		return n
	}
	n := fmt.Sprintf("p%d", len(w.names)+1)
	w.names[id] = n
	return n
}

// crash kills p: its operations still under way are dead (nothing they
// do reaches the database, the queue or the vendor), and it restarts at
// once with nothing in memory.
func (w *World) crash(p *proc, where string) {
	w.logf("CRASH %s (%s)", p.name, where)
	p.epoch++
	p.build()
}

// statementFault draws the fault, if any, of a statement of o's.
func (w *World) statementFault(o *op, kind string) fault {
	if !w.chance(w.cfg.StatementFaultRate) {
		return noFault
	}
	f := fault(1 + w.rng.IntN(4))
	if kind != "commit" && (f == failAfter || f == crashAfter) && w.rng.IntN(2) == 0 {
		f-- // mostly before: an answer lost matters most at a commit
	}
	names := map[fault]string{failBefore: "connection lost before", failAfter: "answer lost after", crashBefore: "crash before", crashAfter: "crash after"}
	if f == failBefore || f == failAfter {
		w.logf("db: %s %s of %s (%s)", names[f], kind, o.proc.name, o.name)
	}
	return f
}

// uuidReader is the seed's stream of random bytes for ids.
type uuidReader struct{ r *rand.ChaCha8 }

func (u uuidReader) Read(p []byte) (int, error) { return u.r.Read(p) }

func seedBytes(seed uint64, salt byte) [32]byte {
	var b [32]byte
	binary.LittleEndian.PutUint64(b[:], seed)
	b[31] = salt
	return b
}
