package metrics

import (
	"fmt"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
)

// asynq's own collector (github.com/hibiken/asynq/x/metrics) was never
// released: its one version is a 2021 pseudo-version built against asynq
// v0.19 that would bring go-redis v8 into the module graph and log through
// the standard logger. These few lines read the same numbers.

var (
	queueSizeDesc = prometheus.NewDesc("payoutd_queue_size",
		"Tasks in an asynq queue, in any state.", []string{"queue"}, nil)
	queueTasksDesc = prometheus.NewDesc("payoutd_queue_tasks",
		"Tasks in an asynq queue by state: pending, active, scheduled, retry, archived.", []string{"queue", "state"}, nil)
	queueLatencyDesc = prometheus.NewDesc("payoutd_queue_latency_seconds",
		"How long the oldest pending task of an asynq queue has waited.", []string{"queue"}, nil)
)

// QueueCollector reports the size of every asynq queue at each scrape.
type QueueCollector struct {
	inspector *asynq.Inspector
}

// NewQueueCollector reads the queues through inspector; the caller closes it.
func NewQueueCollector(inspector *asynq.Inspector) *QueueCollector {
	return &QueueCollector{inspector: inspector}
}

// Describe implements prometheus.Collector.
func (q *QueueCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- queueSizeDesc
	ch <- queueTasksDesc
	ch <- queueLatencyDesc
}

// Collect implements prometheus.Collector. A queue that cannot be read is
// reported as an error (logged by the handler), the others still are.
func (q *QueueCollector) Collect(ch chan<- prometheus.Metric) {
	names, err := q.inspector.Queues()
	if err != nil {
		ch <- prometheus.NewInvalidMetric(queueSizeDesc, fmt.Errorf("list asynq queues: %w", err))
		return
	}
	for _, name := range names {
		info, err := q.inspector.GetQueueInfo(name)
		if err != nil {
			ch <- prometheus.NewInvalidMetric(queueSizeDesc, fmt.Errorf("asynq queue %s: %w", name, err))
			continue
		}
		ch <- prometheus.MustNewConstMetric(queueSizeDesc, prometheus.GaugeValue, float64(info.Size), name)
		for _, s := range []struct {
			state string
			n     int
		}{
			{"pending", info.Pending}, {"active", info.Active}, {"scheduled", info.Scheduled},
			{"retry", info.Retry}, {"archived", info.Archived},
		} {
			ch <- prometheus.MustNewConstMetric(queueTasksDesc, prometheus.GaugeValue, float64(s.n), name, s.state)
		}
		ch <- prometheus.MustNewConstMetric(queueLatencyDesc, prometheus.GaugeValue, info.Latency.Seconds(), name)
	}
}
