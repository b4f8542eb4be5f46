package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime/metrics"
	"runtime/pprof"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"

	"github.com/payoutd/payoutd/api"
	"github.com/payoutd/payoutd/internal/app"
	"github.com/payoutd/payoutd/internal/config"
	"github.com/payoutd/payoutd/internal/credentials"
	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/tasks"
	"github.com/payoutd/payoutd/vendors/sandbox"
	"github.com/payoutd/payoutd/vendors/sandboxacquirer"
)

// inProcessAPI is the API handler built in this process, as `payoutd api`
// builds it (without the queue dashboard), on the tool's database handle,
// the sandbox vendors keeping their payouts in the database as there, and
// the sandbox acquirer making the payments' QRIS.
type inProcessAPI struct {
	handler http.Handler
	close   func()
}

// With creates, the API enqueues into redisURL's queues, as `payoutd api`
// does, and answers without waiting for the worker.
func newInProcessAPI(db *gorm.DB, redisURL string, env models.Environment, sealer *credentials.Sealer, creates bool, completeAfter time.Duration) (*inProcessAPI, error) {
	redisOpts, err := redis.ParseURL(redisURL)
	if err != nil {
		return nil, fmt.Errorf("-redis-url: %w", err)
	}
	if _, err := asynq.ParseRedisURI(redisURL); err != nil {
		return nil, fmt.Errorf("-redis-url: %w", err)
	}
	// One pool for the API and its task client, as `payoutd api` has.
	rdb := redis.NewClient(redisOpts)
	queue := tasks.NewClient(app.SharedRedis{Client: rdb})
	cfg := config.Defaults()
	cfg.Env = env
	cfg.ClientWriteRateLimit, cfg.ClientReadRateLimit, cfg.MaxInFlight = 0, 0, 0 // capacity, not the limits
	if creates {
		cfg.DisbursementSubmitWait = 0
		cfg.SandboxCompleteAfter = completeAfter
	}
	// The sandbox acquirer, as `payoutd api` makes it; its callback secret
	// is never used here (no acquirer notifications).
	acq, err := sandboxacquirer.New(sandboxacquirer.Options{Secret: cfg.AcquirerCallbackSecret()})
	if err != nil {
		queue.Close()
		rdb.Close()
		return nil, err
	}
	registry := sandbox.Registry(sandbox.Options{CompleteAfter: cfg.SandboxCompleteAfter, Store: sandbox.NewDBStore(db)})
	// The services, as the composition root builds them for `payoutd api`.
	payoutSvc, dispatcher, paymentSvc := app.NewServices(app.Parts{Config: cfg, DB: db, Redis: rdb, Vendors: registry, Acquirer: acq, Queue: queue})
	srv, err := api.New(api.Deps{
		Config: cfg, DB: db, Redis: rdb, Sealer: sealer, Queue: queue, Acquirer: acq, Vendors: registry,
		Payouts: payoutSvc, Dispatch: dispatcher, Payments: paymentSvc,
	})
	if err != nil {
		queue.Close()
		rdb.Close()
		return nil, err
	}
	return &inProcessAPI{handler: srv.Handler(), close: func() { srv.Close(); queue.Close(); rdb.Close() }}, nil
}

// inProcessRemoteAddr is the peer the handler sees (the IP allow-list and
// the access log read it).
const inProcessRemoteAddr = "127.0.0.1:50000"

// handlerSender calls the handler directly: no HTTP parsing, no TCP.
func handlerSender(h http.Handler) sendFunc {
	return func(req *http.Request, want int) (bool, string) {
		req.RemoteAddr = inProcessRemoteAddr
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code == want {
			return true, ""
		}
		return false, describeFailure(fmt.Sprintf("%d %s", rec.Code, http.StatusText(rec.Code)), rec.Body.Bytes())
	}
}

// inProcessProfile writes a CPU profile of the measured window to a file
// and counts the heap allocations and GC cycles of the window. In-process,
// these include the load generator's share (building requests, recording
// responses), a small part next to the handler's.
type inProcessProfile struct {
	path string
	file *os.File
	err  error
	// allocations, bytes and GC cycles at opening, then their growth.
	objects, bytes, cycles uint64
}

var allocMetrics = []string{"/gc/heap/allocs:objects", "/gc/heap/allocs:bytes", "/gc/cycles/total:gc-cycles"}

func readAllocMetrics() (objects, bytes, cycles uint64) {
	samples := make([]metrics.Sample, len(allocMetrics))
	for i, name := range allocMetrics {
		samples[i].Name = name
	}
	metrics.Read(samples)
	return samples[0].Value.Uint64(), samples[1].Value.Uint64(), samples[2].Value.Uint64()
}

func (p *inProcessProfile) opened() {
	if p.file, p.err = os.Create(p.path); p.err == nil {
		if p.err = pprof.StartCPUProfile(p.file); p.err != nil {
			p.file.Close()
			p.file = nil
		}
	}
	p.objects, p.bytes, p.cycles = readAllocMetrics()
}

func (p *inProcessProfile) closed() {
	objects, bytes, cycles := readAllocMetrics()
	p.objects, p.bytes, p.cycles = objects-p.objects, bytes-p.bytes, cycles-p.cycles
	if p.file == nil {
		return
	}
	pprof.StopCPUProfile()
	if err := p.file.Close(); err != nil && p.err == nil {
		p.err = err
	}
}

// allocStats are the allocation figures per request of an in-process run.
type allocStats struct {
	ObjectsPerRequest float64 `json:"objects_per_request"`
	BytesPerRequest   float64 `json:"bytes_per_request"`
	GCCycles          uint64  `json:"gc_cycles"`
}

func (p *inProcessProfile) perRequest(requests int) *allocStats {
	if requests == 0 {
		return nil
	}
	return &allocStats{
		ObjectsPerRequest: round(float64(p.objects)/float64(requests), 1),
		BytesPerRequest:   round(float64(p.bytes)/float64(requests), 0),
		GCCycles:          p.cycles,
	}
}
