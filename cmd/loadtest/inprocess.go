package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime/pprof"

	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"

	"github.com/payoutd/payoutd/api"
	"github.com/payoutd/payoutd/config"
	"github.com/payoutd/payoutd/credentials"
	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors/sandbox"
)

// inProcessAPI is the API handler built in this process, as `payoutd api`
// builds it (without the queue dashboard), on the tool's database handle.
type inProcessAPI struct {
	handler http.Handler
	close   func()
}

func newInProcessAPI(db *gorm.DB, redisURL string, env models.Environment, sealer *credentials.Sealer) (*inProcessAPI, error) {
	redisOpts, err := redis.ParseURL(redisURL)
	if err != nil {
		return nil, fmt.Errorf("-redis-url: %w", err)
	}
	rdb := redis.NewClient(redisOpts)
	cfg := config.Defaults()
	cfg.Env = env
	srv, err := api.New(api.Deps{
		Config: cfg, DB: db, Redis: rdb, Sealer: sealer,
		Vendors: sandbox.Registry(sandbox.Options{CompleteAfter: cfg.SandboxCompleteAfter}),
	})
	if err != nil {
		rdb.Close()
		return nil, err
	}
	return &inProcessAPI{handler: srv.Handler(), close: func() { srv.Close(); rdb.Close() }}, nil
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

// cpuProfile writes a CPU profile of the measured window to a file.
type cpuProfile struct {
	path string
	file *os.File
	err  error
}

func (p *cpuProfile) start() {
	if p.file, p.err = os.Create(p.path); p.err != nil {
		return
	}
	if p.err = pprof.StartCPUProfile(p.file); p.err != nil {
		p.file.Close()
		p.file = nil
	}
}

func (p *cpuProfile) stop() {
	if p.file == nil {
		return
	}
	pprof.StopCPUProfile()
	if err := p.file.Close(); err != nil && p.err == nil {
		p.err = err
	}
}
