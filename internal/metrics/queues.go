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

	// The names asynq's dashboard (asynqmon) queries Prometheus for when
	// its PrometheusAddress is set (PROMETHEUS_URL): its graphs.
	asynqSizeDesc = prometheus.NewDesc("asynq_queue_size",
		"Tasks in an asynq queue, in any state (for asynqmon's graphs).", []string{"queue"}, nil)
	asynqLatencyDesc = prometheus.NewDesc("asynq_queue_latency_seconds",
		"How long the oldest pending task of an asynq queue has waited (for asynqmon's graphs).", []string{"queue"}, nil)
	asynqMemoryDesc = prometheus.NewDesc("asynq_queue_memory_usage_approx_bytes",
		"Approximate Redis memory an asynq queue uses (for asynqmon's graphs).", []string{"queue"}, nil)
	asynqProcessedDesc = prometheus.NewDesc("asynq_tasks_processed_total",
		"Tasks of an asynq queue processed, succeeded or failed, since Redis holds the queue (for asynqmon's graphs).", []string{"queue"}, nil)
	asynqFailedDesc = prometheus.NewDesc("asynq_tasks_failed_total",
		"Tasks of an asynq queue whose processing failed, since Redis holds the queue (for asynqmon's graphs).", []string{"queue"}, nil)
	asynqEnqueuedDesc = prometheus.NewDesc("asynq_tasks_enqueued_total",
		"Tasks in an asynq queue by state (for asynqmon's graphs).", []string{"queue", "state"}, nil)
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
	for _, d := range []*prometheus.Desc{asynqSizeDesc, asynqLatencyDesc, asynqMemoryDesc, asynqProcessedDesc, asynqFailedDesc, asynqEnqueuedDesc} {
		ch <- d
	}
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
		ch <- prometheus.MustNewConstMetric(asynqSizeDesc, prometheus.GaugeValue, float64(info.Size), name)
		// Every state a task of the queue can be in, so that the states add
		// up to the queue's size (completed tasks are retained ones).
		for _, s := range []struct {
			state string
			n     int
		}{
			{"pending", info.Pending}, {"active", info.Active}, {"scheduled", info.Scheduled},
			{"retry", info.Retry}, {"archived", info.Archived}, {"completed", info.Completed},
			{"aggregating", info.Aggregating},
		} {
			ch <- prometheus.MustNewConstMetric(queueTasksDesc, prometheus.GaugeValue, float64(s.n), name, s.state)
			ch <- prometheus.MustNewConstMetric(asynqEnqueuedDesc, prometheus.GaugeValue, float64(s.n), name, s.state)
		}
		ch <- prometheus.MustNewConstMetric(queueLatencyDesc, prometheus.GaugeValue, info.Latency.Seconds(), name)
		ch <- prometheus.MustNewConstMetric(asynqLatencyDesc, prometheus.GaugeValue, info.Latency.Seconds(), name)
		ch <- prometheus.MustNewConstMetric(asynqMemoryDesc, prometheus.GaugeValue, float64(info.MemoryUsage), name)
		ch <- prometheus.MustNewConstMetric(asynqProcessedDesc, prometheus.CounterValue, float64(info.ProcessedTotal), name)
		ch <- prometheus.MustNewConstMetric(asynqFailedDesc, prometheus.CounterValue, float64(info.FailedTotal), name)
	}
}
