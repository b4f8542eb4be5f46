package tasks_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"

	"github.com/payoutd/payoutd/internal/testenv"
	"github.com/payoutd/payoutd/tasks"
)

// Enqueueing the same work twice (a create retried, a webhook enqueued by
// the transition and again by the sweep) is not an error and leaves one
// task: its id is derived from the entity. A later enqueue of the same
// work with another slot (a sweep, the next status check) is a task of its
// own.
func TestDuplicateEnqueueIsOneTaskAndNoError(t *testing.T) {
	t.Parallel()
	client, inspector, prefix := newQueue(t)
	ctx := context.Background()
	payout, event := uuid.New(), uuid.New()

	for i := 0; i < 2; i++ {
		if err := client.EnqueueSubmit(ctx, payout, ""); err != nil {
			t.Fatalf("submit enqueue %d: %v", i+1, err)
		}
		if err := client.EnqueuePoll(ctx, payout, "1", time.Minute); err != nil {
			t.Fatalf("poll enqueue %d: %v", i+1, err)
		}
		if err := client.EnqueueWebhook(ctx, event, ""); err != nil {
			t.Fatalf("webhook enqueue %d: %v", i+1, err)
		}
	}
	if err := client.EnqueueSubmit(ctx, payout, "sweep-1"); err != nil {
		t.Fatalf("submit enqueue by a sweep: %v", err)
	}

	ids := func(list func(string, ...asynq.ListOption) ([]*asynq.TaskInfo, error), queue string) []string {
		t.Helper()
		infos, err := list(prefix + queue)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, ti := range infos {
			out = append(out, ti.ID)
		}
		return out
	}
	submit := tasks.TypePayoutSubmit + ":" + payout.String()
	if got := ids(inspector.ListPendingTasks, tasks.QueueCritical); len(got) != 2 || !contains(got, submit) || !contains(got, submit+":sweep-1") {
		t.Fatalf("pending payout tasks %v, want %s once and its sweep's", got, submit)
	}
	if got := ids(inspector.ListScheduledTasks, tasks.QueueCritical); len(got) != 1 || got[0] != tasks.TypePayoutPoll+":"+payout.String()+":1" {
		t.Fatalf("scheduled payout tasks %v, want the one poll", got)
	}
	if got := ids(inspector.ListPendingTasks, tasks.QueueDefault); len(got) != 1 || got[0] != tasks.TypeWebhookDeliver+":"+event.String() {
		t.Fatalf("webhook tasks %v, want one", got)
	}
}

// The duplicate is the only error forgiven: a queue that cannot be reached
// is still reported, so the caller leaves the work to the sweep knowingly.
func TestEnqueueReportsAnUnreachableQueue(t *testing.T) {
	t.Parallel()
	client := tasks.NewClient(asynq.RedisClientOpt{Addr: "127.0.0.1:1", DialTimeout: 100 * time.Millisecond})
	t.Cleanup(func() { client.Close() })
	if err := client.EnqueueSubmit(context.Background(), uuid.New(), ""); err == nil {
		t.Fatal("enqueue to an unreachable Redis returned nil")
	}
}

// A commit's webhook events go out together: every one is queued once,
// and an unreachable queue is counted for each, the first failure named.
func TestEnqueueWebhooksQueuesEachOne(t *testing.T) {
	t.Parallel()
	client, inspector, prefix := newQueue(t)
	events := make([]uuid.UUID, 20) // more than are enqueued at once
	for i := range events {
		events[i] = uuid.New()
	}
	if failed, first := client.EnqueueWebhooks(context.Background(), events); failed != 0 {
		t.Fatalf("%d failed, first: %v", failed, first)
	}
	infos, err := inspector.ListPendingTasks(prefix+tasks.QueueDefault, asynq.PageSize(100))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ti := range infos {
		got = append(got, ti.ID)
	}
	for _, id := range events {
		if !contains(got, tasks.TypeWebhookDeliver+":"+id.String()) {
			t.Fatalf("event %s not queued; queued %d: %v", id, len(got), got)
		}
	}
	if len(got) != len(events) {
		t.Fatalf("%d tasks queued for %d events", len(got), len(events))
	}

	down := tasks.NewClient(asynq.RedisClientOpt{Addr: "127.0.0.1:1", DialTimeout: 100 * time.Millisecond})
	t.Cleanup(func() { down.Close() })
	if failed, first := down.EnqueueWebhooks(context.Background(), events[:3]); failed != 3 || first == nil {
		t.Fatalf("unreachable queue: %d failed (want 3), first %v", failed, first)
	}
}

// newQueue is a task client on queues of the test's own, and an inspector
// of them; nothing serves them, so they are dropped at the end.
func newQueue(t *testing.T) (*tasks.Client, *asynq.Inspector, string) {
	t.Helper()
	rdb, _ := testenv.Redis(t)
	opt, prefix := testenv.Queue(t, rdb)
	client := tasks.NewPrefixedClient(opt, prefix)
	t.Cleanup(func() { client.Close() })
	inspector := asynq.NewInspector(opt)
	t.Cleanup(func() {
		for queue := range tasks.QueuePriorities(prefix) {
			inspector.DeleteQueue(queue, true)
		}
		inspector.Close()
	})
	return client, inspector, prefix
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// Every periodic task has a timeout, no retry (the next period is one) and
// an id naming its period, kept at least a period after it ran: the
// enqueues of one period by every worker's scheduler are one task.
func TestPeriodicTasksCarryTheirPeriod(t *testing.T) {
	slot := time.Date(2026, 11, 22, 10, 15, 0, 0, time.UTC)
	if len(tasks.PeriodicTasks) != 5 {
		t.Fatalf("%d periodic tasks, want 5", len(tasks.PeriodicTasks))
	}
	for _, p := range tasks.PeriodicTasks {
		task, opts := p.Task(slot)
		got := map[asynq.OptionType]any{}
		for _, o := range opts {
			got[o.Type()] = o.Value()
		}
		if task.Type() != p.Type || got[asynq.TaskIDOpt] != p.Type+":1795342500" {
			t.Errorf("%s: task id %v, want %s:1795342500", p.Type, got[asynq.TaskIDOpt], p.Type)
		}
		if d, _ := got[asynq.TimeoutOpt].(time.Duration); d <= 0 || d > p.Every && d > time.Minute {
			t.Errorf("%s: timeout %v, want one within its period (or a minute)", p.Type, got[asynq.TimeoutOpt])
		}
		if d, _ := got[asynq.RetentionOpt].(time.Duration); d < p.Every {
			t.Errorf("%s: retention %v, want at least its period %s", p.Type, got[asynq.RetentionOpt], p.Every)
		}
		if got[asynq.MaxRetryOpt] != 0 {
			t.Errorf("%s: max retry %v, want 0", p.Type, got[asynq.MaxRetryOpt])
		}
		if _, unique := got[asynq.UniqueOpt]; unique {
			t.Errorf("%s: Unique set; its lock goes when the task finishes", p.Type)
		}
	}
}
