package sim

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/payoutd/payoutd/admin"
	"github.com/payoutd/payoutd/internal/credentials"
	"github.com/payoutd/payoutd/internal/database"
	"github.com/payoutd/payoutd/ledger"
	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors"
	"github.com/payoutd/payoutd/vendors/sandboxacquirer"
)

// quietFor bounds the liveness phase in simulated time: every payout must
// be final, and agree with the vendor, within it once the faults stop.
const quietFor = 5 * 24 * time.Hour

// Result is one seed's run.
type Result struct {
	Seed    uint64
	Config  Config
	Steps   int      // steps taken, liveness phase included
	History []string // every line, up to the failure if any
	Err     error    // the broken invariant, nil when the run held
}

// Hash is the history's digest: two runs of a seed must have the same.
func (r *Result) Hash() string {
	h := sha256.Sum256([]byte(strings.Join(r.History, "\n")))
	return hex.EncodeToString(h[:8])
}

// Run simulates one seed with steps fault steps and its drawn Config.
func Run(seed uint64, steps int) *Result {
	cfg := drawConfig(rand.New(rand.NewPCG(seed, 0x5eed)), steps)
	return RunConfig(seed, cfg)
}

// RunConfig simulates one seed with cfg (the shrinker's way in).
func RunConfig(seed uint64, cfg Config) *Result {
	w, res := simulate(seed, cfg)
	w.close()
	return res
}

// close frees the run's in-memory database.
func (w *World) close() {
	if w.db == nil {
		return
	}
	if sqlDB, err := w.db.DB(); err == nil {
		_ = sqlDB.Close()
	}
}

// simulate runs one seed and leaves its world open (tests look into it).
func simulate(seed uint64, cfg Config) (w *World, res *Result) {
	w = &World{seed: seed, cfg: cfg, rng: rand.New(rand.NewPCG(seed, 1)), clock: &clock{now: epoch},
		sched: newScheduler(), names: map[string]string{}}
	res = &Result{Seed: seed, Config: cfg}
	defer func() {
		if r := recover(); r != nil {
			res.Err = fmt.Errorf("panic: %v", r)
		}
		res.Steps, res.History = w.step, w.history
	}()
	registerDriver()
	world.Lock()
	world.w = w
	world.Unlock()
	defer func() {
		world.Lock()
		world.w = nil
		world.Unlock()
	}()
	uuid.SetRand(uuidReader{rand.NewChaCha8(seedBytes(seed, 2))})
	defer uuid.SetRand(nil)

	if err := w.setUp(); err != nil {
		res.Err = fmt.Errorf("set-up: %w", err)
		return w, res
	}
	for w.step = 1; w.step <= cfg.Steps; w.step++ {
		w.stepOnce()
		w.reapDead()
		if err := w.check(false); err != nil {
			res.Err = err
			return w, res
		}
	}
	res.Err = w.quietDown()
	return w, res
}

// setUp opens a fresh in-memory database, migrates it, and provisions one
// merchant with its wallets, funded, and the processes.
func (w *World) setUp() error {
	ctx := context.Background()
	db, err := database.OpenWith(fmt.Sprintf("file:sim%d?mode=memory", w.seed), database.Options{Now: w.clock.Now, SQLiteDriver: driverName})
	if err != nil {
		return err
	}
	w.db = db
	if _, err := database.Migrate(ctx, db); err != nil {
		return err
	}
	now := w.clock.Now()
	sealer, err := credentials.NewSealer(seedKey(w.seed))
	if err != nil {
		return err
	}
	w.sealer = sealer
	issued, err := admin.CreateClient(ctx, admin.Deps{DB: db, Sealer: sealer, Env: models.Production},
		admin.ClientOptions{Name: "sim merchant", PayoutWebhookURL: "https://merchant.example/payouts"})
	if err != nil {
		return err
	}
	c := &models.Client{}
	if err := db.Where("id = ?", issued.ClientID).Take(c).Error; err != nil {
		return err
	}
	c.RefundFeeOnReturn = w.rng.IntN(2) == 0
	if w.rng.IntN(2) == 0 {
		threshold := models.Rupiah(800_000)
		c.ReviewThreshold = &threshold
	}
	if err := db.Model(c).Select("refund_fee_on_return", "review_threshold").Updates(c).Error; err != nil {
		return err
	}
	w.merchant = &merchant{w: w, secret: issued.CallbackSecret, received: map[string]int{}}
	w.client = c
	w.names[c.ID.String()] = "merchant"
	for i := range w.cfg.Wallets {
		wallet := &models.Wallet{ID: models.NewID(), ClientID: c.ID, Name: fmt.Sprintf("wallet %d", i+1), Vendor: vendorName,
			State: models.WalletActive, IsDefault: i == 0, CreatedAt: now, UpdatedAt: now}
		if err := db.Create(wallet).Error; err != nil {
			return err
		}
		if _, err := ledger.Adjust(ctx, db, now, wallet.ID, models.Rupiah(int64(2+w.rng.IntN(20))*1_000_000), "sim funding"); err != nil {
			return err
		}
		w.wallets = append(w.wallets, wallet.ID)
		w.names[wallet.ID.String()] = fmt.Sprintf("w%d", i+1)
	}
	acq, err := sandboxacquirer.New(sandboxacquirer.Options{Secret: "sim", Now: w.clock.Now})
	if err != nil {
		return err
	}
	w.acquirerAPI = acq
	w.vendor = &vendor{w: w, byRef: map[string]*vendorPayout{}, notifies: w.rng.IntN(2) == 0}
	w.queue = &queue{w: w}
	w.api, w.worker, w.operator = &proc{w: w, name: "api"}, &proc{w: w, name: "worker"}, &proc{w: w, name: "operator"}
	for _, p := range []*proc{w.api, w.worker, w.operator} {
		p.build()
	}
	w.logf("seed %d: %d wallets, vendor notifies %v, review threshold %v, config %+v", w.seed, w.cfg.Wallets, w.vendor.notifies, c.ReviewThreshold != nil, w.cfg)
	return nil
}

// reapDead lets every parked operation of a dead process end: it hears
// nothing back and can no longer reach the database.
func (w *World) reapDead() {
	for range 1000 {
		var dead *op
		for _, o := range w.sched.parked {
			if o.dead() {
				dead = o
				break
			}
		}
		if dead == nil {
			return
		}
		w.logEvent(dead.proc, dead.name, w.sched.resume(dead, died))
	}
	panic("operations of a dead process keep parking")
}

// quietDown is the liveness phase: no more faults; the vendor settles
// what it holds, the worker runs its tasks and sweeps, the operator
// resolves late results, and the clock moves on, until every payout is
// final and agrees with the vendor (check with quiescent) or quietFor
// passes.
func (w *World) quietDown() error {
	w.quiet = true
	w.logf("faults stop")
	start := w.clock.Now()
	for ; ; w.step++ {
		w.drainParked()
		if len(w.api.claimed) > 0 {
			w.stepInlineSubmit()
			w.drainParked()
		}
		for _, t := range w.queue.due(w.clock.Now()) {
			w.runTask(t)
			w.drainParked()
		}
		if w.vendor.notifies {
			for _, ref := range w.vendor.order {
				if vp := w.vendor.byRef[ref]; vp.acked != w.vendor.reported(vp) {
					w.callback(vp, w.vendor.reported(vp))
					w.drainParked()
				}
			}
		}
		w.run(w.operator, "resolve late results", func(ctx context.Context) error { return w.resolveLate(ctx, w.operator) })
		w.approveAll()
		w.stepSweep()
		w.stepExpire()
		w.stepWebhookSweep()
		w.stepPaymentSweep()
		for _, a := range w.acquirer {
			if a.result != "" && !a.acked {
				w.notifyPayment(a)
			}
		}
		w.drainParked()
		for _, ref := range w.vendor.refs(func(vp *vendorPayout) bool { return vp.status == vendors.PayoutPending }) {
			if vp := w.vendor.byRef[ref]; w.clock.Now().Sub(vp.since) >= time.Second {
				w.settle(vp)
			}
		}
		if err := w.check(false); err != nil {
			return err
		}
		err := w.check(true)
		if err == nil && len(w.sched.parked) == 0 && len(w.vendor.delayed) == 0 {
			w.logf("quiet: every payout final and agreed after %s", w.clock.Now().Sub(start))
			return nil
		}
		if w.clock.Now().Sub(start) > quietFor {
			return fmt.Errorf("%w (after %s without faults)", err, quietFor)
		}
		w.advance(w.untilNext())
	}
}

// drainParked resumes parked operations until none is left.
func (w *World) drainParked() {
	for range 10000 {
		if len(w.sched.parked) == 0 {
			return
		}
		o := w.sched.parked[0]
		w.logEvent(o.proc, o.name, w.sched.resume(o, wakeOf(o)))
	}
	panic("operations keep parking")
}

// untilNext is how far the quiet clock may jump: to the first thing due
// (a task, a row's next check, a lock's expiry, a payout the vendor
// settles), at least a second, at most six hours.
func (w *World) untilNext() time.Duration {
	now := w.clock.Now()
	next := now.Add(6 * time.Hour)
	consider := func(t time.Time) {
		if !t.IsZero() && t.Before(next) {
			next = t
		}
	}
	consider(w.queue.next())
	consider(w.vendor.nextDeadline())
	for _, ref := range w.vendor.order {
		if vp := w.vendor.byRef[ref]; vp.status == vendors.PayoutPending {
			consider(vp.since.Add(time.Second))
		}
	}
	var row struct{ Check, Lock *time.Time }
	w.db.Model(&models.Disbursement{}).Select("MIN(next_check_at) AS check").Scan(&row)
	w.db.Model(&models.Disbursement{}).Where("status IN ?", []models.DisbursementStatus{models.StatusVerified, models.StatusPendingVerification}).
		Select("MIN(lock_expires_at) AS lock").Scan(&row)
	var hook struct{ Next *time.Time }
	w.db.Model(&models.WebhookEvent{}).Where("state = ?", models.WebhookPending).Select("MIN(next_attempt_at) AS next").Scan(&hook)
	var pay struct{ Expiry, Settle *time.Time }
	w.db.Model(&models.Payment{}).Where("status = ?", models.PaymentPending).Select("MIN(expired_at) AS expiry").Scan(&pay)
	w.db.Model(&models.Payment{}).Where("status = ? AND settled_at IS NULL", models.PaymentSuccess).Select("MIN(settle_at) AS settle").Scan(&pay)
	for _, t := range []*time.Time{row.Check, row.Lock, hook.Next, pay.Expiry, pay.Settle} {
		if t != nil {
			consider(*t)
		}
	}
	return max(next.Sub(now), time.Second)
}

// approveAll is the operator approving every payout waiting for review.
func (w *World) approveAll() {
	var ids []uuid.UUID
	w.db.Model(&models.Disbursement{}).Where("status = ?", models.StatusPendingVerification).Order("created_at, id").Pluck("id", &ids)
	for _, id := range ids {
		w.run(w.operator, "approve "+w.name(id.String()), func(ctx context.Context) error {
			_, err := w.operator.svc.Approve(ctx, id, "sim")
			return err
		})
		w.drainParked()
	}
}

// seedKey is the run's SECRETS_KEY: any 32 bytes will do.
func seedKey(seed uint64) []byte {
	k := seedBytes(seed, 3)
	return k[:]
}
