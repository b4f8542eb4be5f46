package main

import (
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/payoutd/payoutd/tasks"
)

// Two `payoutd worker` processes on one Redis run each periodic task once
// per period, not once per process (audit: asynq's Scheduler with Unique
// let every worker enqueue each period, so N workers ran it N times). The
// count is asynq's own: the tasks the critical queue processed, where an
// idle stack runs only the periodic payout:expire, payout:sweep and
// payment:sweep.
func TestPeriodicTasksRunOncePerPeriodAcrossWorkerProcesses(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	start := time.Now()
	first := s.startWorker()
	time.Sleep(time.Second) // processes never start at the same instant
	second := s.startWorker()
	time.Sleep(21 * time.Second)
	first.Process.Kill()
	second.Process.Kill()
	first.Wait()
	second.Wait()
	elapsed := time.Since(start)

	opt, err := asynq.ParseRedisURI(s.redisURL)
	if err != nil {
		t.Fatal(err)
	}
	inspector := asynq.NewInspector(opt)
	defer inspector.Close()
	info, err := inspector.GetQueueInfo(tasks.QueueCritical)
	if err != nil {
		t.Fatal(err)
	}
	// At most one run per period that began while the workers ran, for each
	// periodic task of the critical queue.
	most := 0
	for _, p := range tasks.PeriodicTasks {
		if p.Queue == tasks.QueueCritical {
			most += int(elapsed/p.Every) + 1
		}
	}
	runs := info.Processed + info.Active + info.Pending
	if runs == 0 || runs > most {
		t.Fatalf("the critical queue ran %d periodic tasks in %s with two worker processes; once per period is at most %d",
			runs, elapsed.Round(time.Millisecond), most)
	}
	t.Logf("%d periodic runs in %s (at most %d)", runs, elapsed.Round(time.Millisecond), most)
}
