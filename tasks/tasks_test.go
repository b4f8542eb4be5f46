package tasks_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"

	"github.com/payoutd/payoutd/tasks"
	"github.com/payoutd/payoutd/testenv"
)

// Enqueueing the same work twice (a create retried, a webhook enqueued by
// the transition and again by the sweep) is not an error and leaves one
// task: its id is derived from the entity. A later enqueue of the same
// work with another slot (a sweep, the next status check) is a task of its
// own.
func TestDuplicateEnqueueIsOneTaskAndNoError(t *testing.T) {
	t.Parallel()
	rdb, _ := testenv.Redis(t)
	opt, prefix := testenv.Queue(t, rdb)
	client := tasks.NewPrefixedClient(opt, prefix)
	t.Cleanup(func() { client.Close() })
	inspector := asynq.NewInspector(opt)
	t.Cleanup(func() {
		// Nothing serves these queues: drop them from a shared Redis.
		for queue := range tasks.QueuePriorities(prefix) {
			inspector.DeleteQueue(queue, true)
		}
		inspector.Close()
	})
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

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
