// Package tasks names the asynq tasks of the service and builds them.
// Payloads carry ids only: a handler re-reads the row, so a task enqueued
// twice or delivered twice acts on the current state.
package tasks

import (
	"time"

	"github.com/hibiken/asynq"
)

// Queues, with their weights in the worker.
const (
	QueueCritical = "critical" // money movements
	QueueDefault  = "default"
	QueueLow      = "low" // housekeeping
)

// QueuePriorities is how often the worker serves each queue, relatively.
var QueuePriorities = map[string]int{QueueCritical: 6, QueueDefault: 3, QueueLow: 1}

// Task types.
const (
	// TypeReconcile runs the ledger reconciliation and logs what it finds.
	TypeReconcile = "ops:reconcile"
)

// ReconcileEvery is the period of TypeReconcile.
const ReconcileEvery = 15 * time.Minute

// NewReconcile builds the periodic reconciliation. Unique keeps the
// schedulers of several worker instances from enqueueing it twice per slot.
func NewReconcile() (*asynq.Task, []asynq.Option) {
	return asynq.NewTask(TypeReconcile, nil),
		[]asynq.Option{asynq.Queue(QueueLow), asynq.Unique(ReconcileEvery - time.Minute), asynq.MaxRetry(0)}
}
