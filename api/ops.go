package api

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/pprof"
	runtimepprof "runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/hibiken/asynq"
	"github.com/hibiken/asynqmon"

	"github.com/payoutd/payoutd/internal/dashboardfonts"
	"github.com/payoutd/payoutd/models"
)

// GET /healthz: the process is alive.
func (s *Server) handleHealth(c *gin.Context) {
	c.JSON(http.StatusOK, gin.H{"status": "ok"})
}

// GET /readyz: the database and Redis answer; 503 names what does not.
func (s *Server) handleReady(c *gin.Context) {
	ctx, cancel := context.WithTimeout(c.Request.Context(), 2*time.Second)
	defer cancel()
	var problems []error
	if sqlDB, err := s.db.DB(); err != nil {
		problems = append(problems, err)
	} else if err := sqlDB.PingContext(ctx); err != nil {
		problems = append(problems, errors.New("database unreachable"))
	}
	if err := s.redis.Ping(ctx).Err(); err != nil {
		problems = append(problems, errors.New("redis unreachable"))
	}
	if len(problems) > 0 {
		names := make([]string, len(problems))
		for i, p := range problems {
			names[i] = p.Error()
		}
		fail(c, models.WithHint(errNotReady, strings.Join(names, "; ")))
		return
	}
	c.JSON(http.StatusOK, gin.H{"status": "ready"})
}

// dashboardPath is where the asynq dashboard (asynqmon) is mounted.
const dashboardPath = "/ops/queues"

// mountDashboard serves asynqmon behind HTTP basic auth with ADMIN_USER and
// ADMIN_PASSWORD. Without them configured every request gets 401. Browsers'
// cross-site state changes are refused; OPS_READ_ONLY refuses every change.
func (s *Server) mountDashboard(queueRedis asynq.RedisConnOpt) {
	// With a Prometheus that scrapes the API's /metrics (asynq_* queue
	// metrics), the dashboard's Metrics tab draws its graphs.
	mon := asynqmon.New(asynqmon.Options{RootPath: dashboardPath, RedisConnOpt: queueRedis, ReadOnly: s.cfg.OpsReadOnly,
		PrometheusAddress: s.cfg.PrometheusURL})
	s.closers = append(s.closers, mon.Close)
	ops := s.engine.Group("/ops", s.refuseCrossOrigin, s.requireAdmin)
	if s.cfg.OpsReadOnly {
		ops.Use(refuseWrites)
	}
	page := withOfflineFonts(mon)
	ops.Any("/queues", gin.WrapH(page))
	ops.Any("/queues/*any", gin.WrapH(page))
	ops.GET(dashboardFontsPath+"/*file", gin.WrapH(http.StripPrefix("/ops"+dashboardFontsPath+"/", http.FileServerFS(dashboardfonts.FS))))
}

// dashboardFontsPath is where the dashboard's own fonts are served, under
// /ops (operators only, as the page).
const dashboardFontsPath = "/dashboard-fonts"

// googleFontLinks are the stylesheets asynqmon's page loads from the
// internet: Roboto (the text falls back to the system's fonts) and the
// Material Icons its buttons are drawn with.
var googleFontLinks = [][]byte{
	[]byte(`<link rel="stylesheet" href="https://fonts.googleapis.com/css?family=Roboto:300,400,500,700&display=swap"/>`),
	[]byte(`<link rel="stylesheet" href="https://fonts.googleapis.com/icon?family=Material+Icons"/>`),
}

// withOfflineFonts serves the dashboard with its HTML page pointing at the
// fonts payoutd serves itself (package dashboardfonts) instead of Google
// Fonts, so that it works on a network without internet access. Only the
// HTML page is rewritten; its API and scripts pass through untouched.
func withOfflineFonts(mon http.Handler) http.Handler {
	local := []byte(`<link rel="stylesheet" href="/ops` + dashboardFontsPath + `/fonts.css"/>`)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || strings.Contains(r.URL.Path, "/api/") || strings.Contains(r.URL.Path, "/static/") {
			mon.ServeHTTP(w, r)
			return
		}
		page := &bufferedResponse{header: http.Header{}, status: http.StatusOK}
		mon.ServeHTTP(page, r)
		body := page.body.Bytes()
		if page.header.Get("Content-Type") == "" {
			// What net/http would have sniffed had the page been written
			// to the connection (asynqmon sets none).
			page.header.Set("Content-Type", http.DetectContentType(body))
		}
		if strings.HasPrefix(page.header.Get("Content-Type"), "text/html") {
			body = bytes.Replace(body, googleFontLinks[0], local, 1)
			body = bytes.Replace(body, googleFontLinks[1], nil, 1)
			page.header.Del("Content-Length")
		}
		for k, v := range page.header {
			w.Header()[k] = v
		}
		w.WriteHeader(page.status)
		w.Write(body)
	})
}

// bufferedResponse keeps a response in memory so that it can be changed
// before it is sent.
type bufferedResponse struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (b *bufferedResponse) Header() http.Header         { return b.header }
func (b *bufferedResponse) Write(p []byte) (int, error) { return b.body.Write(p) }
func (b *bufferedResponse) WriteHeader(status int)      { b.status = status }

// handleOpsVendors lists each payout vendor's circuit breaker and
// concurrency bound as this process sees them (state is per process: each
// api and worker has its own; a worker's show in its /metrics as
// payoutd_vendor_breaker_state).
func (s *Server) handleOpsVendors(c *gin.Context) {
	c.JSON(http.StatusOK, gin.H{"vendors": s.breakers.Statuses()})
}

// profilerPath is where the Go runtime's profiles are served.
const profilerPath = "/debug/pprof"

// mountProfiler serves Go's runtime profiles (net/http/pprof) at
// /debug/pprof/ to operators only: a CPU profile of a live instance is how
// a slow request is explained, and what it reveals (code paths, memory)
// is for operators, not merchants.
func (s *Server) mountProfiler() {
	debug := s.engine.Group(profilerPath, s.refuseCrossOrigin, s.requireAdmin)
	debug.GET("/", gin.WrapF(pprof.Index))
	debug.GET("/cmdline", gin.WrapF(pprof.Cmdline))
	debug.GET("/profile", s.timedProfile(pprof.Profile))
	debug.GET("/symbol", gin.WrapF(pprof.Symbol))
	debug.POST("/symbol", gin.WrapF(pprof.Symbol))
	debug.GET("/trace", s.timedProfile(pprof.Trace))
	debug.GET("/:name", func(c *gin.Context) {
		name := c.Param("name")
		if runtimepprof.Lookup(name) == nil {
			fail(c, models.ErrNotFound) // pprof's own answer would be plain text
			return
		}
		pprof.Handler(name).ServeHTTP(c.Writer, c.Request)
	})
}

// maxProfileSeconds keeps a CPU profile or trace within the server's
// 60 s WriteTimeout, past which pprof answers in plain text.
const maxProfileSeconds = 50

// timedProfile serves a CPU profile or an execution trace, one at a time
// (the runtime takes one of each at once; pprof would answer a second with
// a plain-text 500), for an optional seconds from 1 to maxProfileSeconds.
func (s *Server) timedProfile(h http.HandlerFunc) gin.HandlerFunc {
	return func(c *gin.Context) {
		if raw, ok := c.GetQuery("seconds"); ok {
			if n, err := strconv.Atoi(raw); err != nil || n < 1 || n > maxProfileSeconds {
				fail(c, models.Invalid(fmt.Sprintf("seconds must be an integer from 1 to %d", maxProfileSeconds)))
				return
			}
		}
		if !s.profiling.TryLock() {
			fail(c, errProfiling)
			return
		}
		defer s.profiling.Unlock()
		h(c.Writer, c.Request)
	}
}
