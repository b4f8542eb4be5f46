// Package tasks names the asynq tasks of the service and builds them.
// Payloads carry ids only: a handler re-reads the row, so a task enqueued
// twice or delivered twice acts on the current state. Task ids derive from
// the entity id, so a duplicate enqueue is refused by asynq and harmless.
package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"
)

// Queues, with their weights in the worker.
const (
	QueueCritical = "critical" // money movements
	QueueDefault  = "default"
	QueueLow      = "low" // housekeeping
)

// QueuePriorities is how often the worker serves each queue, relatively.
// A prefix (see Client) is prepended to each name: tests sharing one Redis
// give every worker queues of its own.
func QueuePriorities(prefix string) map[string]int {
	return map[string]int{prefix + QueueCritical: 6, prefix + QueueDefault: 3, prefix + QueueLow: 1}
}

// InQueue moves a task built here to the prefixed twin of its queue.
func InQueue(prefix string, opts []asynq.Option) []asynq.Option {
	if prefix == "" {
		return opts
	}
	out := make([]asynq.Option, 0, len(opts))
	for _, o := range opts {
		if o.Type() == asynq.QueueOpt {
			o = asynq.Queue(prefix + o.Value().(string))
		}
		out = append(out, o)
	}
	return out
}

// Task types.
const (
	// TypeReconcile runs the ledger reconciliation and logs what it finds.
	TypeReconcile = "ops:reconcile"
	// TypePayoutSubmit submits a VERIFIED disbursement to its vendor.
	TypePayoutSubmit = "payout:submit"
	// TypePayoutPoll asks the vendor for the status of a REQUESTED payout.
	TypePayoutPoll = "payout:poll"
	// TypePayoutExpire expires the locks of disbursements never submitted.
	TypePayoutExpire = "payout:expire"
	// TypePayoutSweep enqueues the submit or poll of every overdue
	// disbursement (the rows are their own outbox).
	TypePayoutSweep = "payout:sweep"
	// TypeWebhookDeliver makes one delivery attempt of a webhook event.
	TypeWebhookDeliver = "webhook:deliver"
	// TypeWebhookSweep enqueues every overdue webhook event.
	TypeWebhookSweep = "webhook:sweep"
	// TypePaymentExpire expires a payment nobody paid by expired_at.
	TypePaymentExpire = "payment:expire"
	// TypePaymentSettle credits a paid payment to its wallet when due.
	TypePaymentSettle = "payment:settle"
	// TypePaymentSweep expires and settles whatever is overdue.
	TypePaymentSweep = "payment:sweep"
)

// Periods of the scheduled tasks.
const (
	ReconcileEvery    = 15 * time.Minute
	ExpireEvery       = 10 * time.Second
	SweepEvery        = 5 * time.Second
	WebhookSweepEvery = 30 * time.Second
	PaymentSweepEvery = 10 * time.Second
)

// webhookMaxRetry is generous: the delivery's own schedule decides when
// to give up (and then archives the task itself).
const webhookMaxRetry = 1000

// retention keeps a finished task (and its id) visible in the dashboard
// and refuses a duplicate enqueue of it for a while.
const retention = 10 * time.Minute

// DisbursementPayload is the payload of the payout tasks.
type DisbursementPayload struct {
	DisbursementID uuid.UUID `json:"disbursement_id"`
}

// ParseDisbursement reads a payout task's payload.
func ParseDisbursement(t *asynq.Task) (uuid.UUID, error) {
	var p DisbursementPayload
	if err := json.Unmarshal(t.Payload(), &p); err != nil || p.DisbursementID == uuid.Nil {
		return uuid.Nil, fmt.Errorf("%s: bad payload: %w", t.Type(), asynq.SkipRetry)
	}
	return p.DisbursementID, nil
}

// NewPayoutSubmit builds payout:submit for a disbursement. slot is empty
// for the first enqueue and names a later one (a sweep), which must not be
// taken for a duplicate.
func NewPayoutSubmit(id uuid.UUID, slot string) (*asynq.Task, []asynq.Option) {
	return newPayoutTask(TypePayoutSubmit, id, slot, 0)
}

// NewPayoutPoll builds payout:poll n for a disbursement, to run after delay.
func NewPayoutPoll(id uuid.UUID, slot string, delay time.Duration) (*asynq.Task, []asynq.Option) {
	return newPayoutTask(TypePayoutPoll, id, slot, delay)
}

func newPayoutTask(typ string, id uuid.UUID, slot string, delay time.Duration) (*asynq.Task, []asynq.Option) {
	payload, _ := json.Marshal(DisbursementPayload{DisbursementID: id})
	taskID := typ + ":" + id.String()
	if slot != "" {
		taskID += ":" + slot
	}
	opts := []asynq.Option{asynq.Queue(QueueCritical), asynq.TaskID(taskID), asynq.Retention(retention),
		asynq.MaxRetry(25), asynq.Timeout(time.Minute)}
	if delay > 0 {
		opts = append(opts, asynq.ProcessIn(delay))
	}
	return asynq.NewTask(typ, payload), opts
}

// EventPayload is the payload of webhook:deliver.
type EventPayload struct {
	EventID uuid.UUID `json:"event_id"`
}

// ParseEvent reads webhook:deliver's payload.
func ParseEvent(t *asynq.Task) (uuid.UUID, error) {
	var p EventPayload
	if err := json.Unmarshal(t.Payload(), &p); err != nil || p.EventID == uuid.Nil {
		return uuid.Nil, fmt.Errorf("%s: bad payload: %w", t.Type(), asynq.SkipRetry)
	}
	return p.EventID, nil
}

// NewWebhookDeliver builds webhook:deliver for an event.
func NewWebhookDeliver(id uuid.UUID, slot string) (*asynq.Task, []asynq.Option) {
	payload, _ := json.Marshal(EventPayload{EventID: id})
	taskID := TypeWebhookDeliver + ":" + id.String()
	if slot != "" {
		taskID += ":" + slot
	}
	return asynq.NewTask(TypeWebhookDeliver, payload), []asynq.Option{asynq.Queue(QueueDefault), asynq.TaskID(taskID),
		asynq.Retention(retention), asynq.MaxRetry(webhookMaxRetry), asynq.Timeout(time.Minute)}
}

// PaymentPayload is the payload of the payment tasks.
type PaymentPayload struct {
	PaymentID uuid.UUID `json:"payment_id"`
}

// ParsePayment reads a payment task's payload.
func ParsePayment(t *asynq.Task) (uuid.UUID, error) {
	var p PaymentPayload
	if err := json.Unmarshal(t.Payload(), &p); err != nil || p.PaymentID == uuid.Nil {
		return uuid.Nil, fmt.Errorf("%s: bad payload: %w", t.Type(), asynq.SkipRetry)
	}
	return p.PaymentID, nil
}

// NewPaymentTask builds payment:expire or payment:settle for a payment,
// to run at at.
func NewPaymentTask(typ string, id uuid.UUID, at time.Time) (*asynq.Task, []asynq.Option) {
	payload, _ := json.Marshal(PaymentPayload{PaymentID: id})
	return asynq.NewTask(typ, payload), []asynq.Option{asynq.Queue(QueueCritical), asynq.TaskID(typ + ":" + id.String()),
		asynq.ProcessAt(at), asynq.Retention(retention), asynq.MaxRetry(25), asynq.Timeout(time.Minute)}
}

// Periodic is a task that the scheduler of every worker enqueues once per
// period; however many workers run, it runs once per period (see Task).
type Periodic struct {
	Type  string
	Every time.Duration
	Queue string
	// Timeout bounds one run; the next period's run is the retry.
	Timeout time.Duration
}

// PeriodicTasks are the service's periodic tasks.
var PeriodicTasks = []Periodic{
	{Type: TypeReconcile, Every: ReconcileEvery, Queue: QueueLow, Timeout: 10 * time.Minute},
	{Type: TypePayoutExpire, Every: ExpireEvery, Queue: QueueCritical, Timeout: time.Minute},
	{Type: TypePayoutSweep, Every: SweepEvery, Queue: QueueCritical, Timeout: time.Minute},
	{Type: TypeWebhookSweep, Every: WebhookSweepEvery, Queue: QueueDefault, Timeout: time.Minute},
	{Type: TypePaymentSweep, Every: PaymentSweepEvery, Queue: QueueCritical, Timeout: time.Minute},
}

// Task builds the run of the period that starts at slot (a multiple of
// Every since the Unix epoch). Its id carries the slot, "ops:reconcile:"
// and the slot's Unix seconds, so the enqueues of that period by every
// worker's scheduler make one task: all but the first get
// asynq.ErrTaskIDConflict. The finished task is retained for at least a
// period (a minute at least) so that a scheduler running late is refused
// too; asynq's Unique was not enough, since its lock goes as soon as the
// task finishes. No retry: the next period is one.
func (p Periodic) Task(slot time.Time) (*asynq.Task, []asynq.Option) {
	return asynq.NewTask(p.Type, nil), []asynq.Option{asynq.Queue(p.Queue),
		asynq.TaskID(fmt.Sprintf("%s:%d", p.Type, slot.Unix())), asynq.Retention(max(p.Every, time.Minute)),
		asynq.MaxRetry(0), asynq.Timeout(p.Timeout)}
}

// Client enqueues the service's tasks. It implements payouts.Queue.
type Client struct {
	c      *asynq.Client
	prefix string
}

// NewClient opens a client on the queue's Redis.
func NewClient(redis asynq.RedisConnOpt) *Client { return &Client{c: asynq.NewClient(redis)} }

// NewPrefixedClient is NewClient enqueueing into prefixed queues.
func NewPrefixedClient(redis asynq.RedisConnOpt, prefix string) *Client {
	return &Client{c: asynq.NewClient(redis), prefix: prefix}
}

// Close releases the connection.
func (c *Client) Close() error { return c.c.Close() }

// EnqueueSubmit enqueues payout:submit; a duplicate is not an error.
func (c *Client) EnqueueSubmit(ctx context.Context, id uuid.UUID, slot string) error {
	task, opts := NewPayoutSubmit(id, slot)
	return c.enqueue(ctx, task, opts)
}

// EnqueuePoll enqueues payout:poll; a duplicate is not an error.
func (c *Client) EnqueuePoll(ctx context.Context, id uuid.UUID, slot string, after time.Duration) error {
	task, opts := NewPayoutPoll(id, slot, after)
	return c.enqueue(ctx, task, opts)
}

// EnqueuePaymentExpire schedules payment:expire at the payment's expiry.
func (c *Client) EnqueuePaymentExpire(ctx context.Context, id uuid.UUID, at time.Time) error {
	task, opts := NewPaymentTask(TypePaymentExpire, id, at)
	return c.enqueue(ctx, task, opts)
}

// EnqueuePaymentSettle schedules payment:settle when the payment is due.
func (c *Client) EnqueuePaymentSettle(ctx context.Context, id uuid.UUID, at time.Time) error {
	task, opts := NewPaymentTask(TypePaymentSettle, id, at)
	return c.enqueue(ctx, task, opts)
}

// EnqueueWebhook enqueues webhook:deliver; a duplicate is not an error.
func (c *Client) EnqueueWebhook(ctx context.Context, id uuid.UUID, slot string) error {
	task, opts := NewWebhookDeliver(id, slot)
	return c.enqueue(ctx, task, opts)
}

// EnqueueWebhooks enqueues webhook:deliver for each event, up to
// enqueueParallel at once (payouts.WebhookBatchQueue): a commit's events
// one after another would be a Redis round trip each on a merchant's path.
func (c *Client) EnqueueWebhooks(ctx context.Context, ids []uuid.UUID) (failed int, first error) {
	var (
		wg sync.WaitGroup
		mu sync.Mutex
	)
	slots := make(chan struct{}, enqueueParallel)
	for _, id := range ids {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			if err := c.EnqueueWebhook(ctx, id, ""); err != nil {
				mu.Lock()
				if failed++; first == nil {
					first = err
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return failed, first
}

// enqueueParallel is how many of a batch's webhook events are enqueued at
// once: a few of the Redis client's connections, not all of them.
const enqueueParallel = 8

// enqueueTimeout bounds one enqueue: every caller has its work stored in
// the database already (the row is the outbox) and a sweep enqueues it
// later, so a slow or unreachable Redis must not hold a merchant's request.
const enqueueTimeout = 500 * time.Millisecond

func (c *Client) enqueue(ctx context.Context, task *asynq.Task, opts []asynq.Option) error {
	ctx, cancel := context.WithTimeout(ctx, enqueueTimeout)
	defer cancel()
	_, err := c.c.EnqueueContext(ctx, task, InQueue(c.prefix, opts)...)
	if errors.Is(err, asynq.ErrTaskIDConflict) || errors.Is(err, asynq.ErrDuplicateTask) {
		return nil
	}
	return err
}

// RetryDelay is the worker's backoff between attempts of a failed task:
// the delay an error asks for (a webhook's schedule), quick for payouts
// (1 s, 2 s, 4 s, … up to 5 minutes), asynq's default otherwise.
func RetryDelay(n int, err error, t *asynq.Task) time.Duration {
	var asked interface{ RetryDelay() time.Duration }
	if errors.As(err, &asked) {
		return asked.RetryDelay()
	}
	switch t.Type() {
	case TypePayoutSubmit, TypePayoutPoll, TypePaymentExpire, TypePaymentSettle:
		d := time.Second << min(n, 9)
		return min(d, 5*time.Minute)
	}
	return asynq.DefaultRetryDelayFunc(n, err, t)
}
