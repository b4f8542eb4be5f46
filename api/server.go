package api

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/go-redis/redis_rate/v10"
	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"

	"github.com/payoutd/payoutd/dispatch"
	"github.com/payoutd/payoutd/internal/authcache"
	"github.com/payoutd/payoutd/internal/config"
	"github.com/payoutd/payoutd/internal/credentials"
	"github.com/payoutd/payoutd/internal/metrics"
	"github.com/payoutd/payoutd/internal/ratelimit"
	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/payments"
	"github.com/payoutd/payoutd/payouts"
	"github.com/payoutd/payoutd/vendors"
	"github.com/payoutd/payoutd/vendors/breaker"
)

// Deps is what the API needs from the rest of the service.
type Deps struct {
	Config  config.Config
	DB      *gorm.DB
	Redis   *redis.Client
	Sealer  *credentials.Sealer
	Vendors vendors.Registry
	// Breakers are the vendors' guards, listed to operators at
	// GET /ops/vendors; nil lists none.
	Breakers *breaker.Set
	// QueueRedis is the asynq connection the dashboard shows; nil disables it.
	QueueRedis asynq.RedisConnOpt
	// Queue hands payouts and payments to the worker; nil leaves them to
	// its sweeps.
	Queue Queue
	// Acquirer issues the QRIS of payments and verifies its callbacks.
	Acquirer vendors.Acquirer
	// Now is the API's clock; nil means time.Now. Tests inject one, and
	// build Payouts and Payments on the same clock.
	Now func() time.Time
	// Metrics counts requests and the services' work and is served at
	// /metrics to operators; nil disables both.
	Metrics *metrics.Metrics
	// Payouts and Payments are the services, built by the composition
	// root (internal/app) with the same Queue, Now and Metrics, and
	// Dispatch the payout service's dispatcher (a create waits for its
	// submit through it); required.
	Payouts  *payouts.Service
	Dispatch *dispatch.Dispatcher
	Payments *payments.Service
}

// Server holds the API's dependencies; its methods are the handlers.
type Server struct {
	cfg     config.Config
	db      *gorm.DB
	store   *models.Store
	redis   *redis.Client
	limiter *redis_rate.Limiter
	// signatures records used signatures, pipelined (sigrecords.go).
	signatures *signatureRecords
	// wallets reads callers' wallets, grouped (walletreads.go).
	wallets  *walletReads
	sealer   *credentials.Sealer
	vendors  vendors.Registry
	breakers *breaker.Set
	payouts  *payouts.Service
	dispatch *dispatch.Dispatcher
	payments *payments.Service
	acquirer vendors.Acquirer
	now      func() time.Time
	metrics  *metrics.Metrics
	// principals caches authenticated callers (AUTH_CACHE_TTL); nil: off.
	principals *authcache.Cache
	// principalsListening is closed once changes announced through Redis
	// reach principals (tests wait for it).
	principalsListening chan struct{}
	engine              *gin.Engine
	// handler is what Handler serves: the engine, which the package's
	// tests wrap to check every answer against openapi.yaml.
	handler http.Handler
	closers []func() error
	// profiling is held while a CPU profile or trace is taken.
	profiling sync.Mutex
	// logins throttles failed operator logins per client address.
	logins *loginThrottle
	// localLimits counts the per-client limits while Redis cannot answer
	// (internal/ratelimit); limitsDown says so in the log.
	localLimits *ratelimit.Local
	limitsDown  ratelimit.DownWarning
	// localSignatures records quotes' signatures while Redis cannot
	// (localrecords.go).
	localSignatures *localSignatures
	// authFailures limits failed authentications per source address
	// (AUTH_FAILURE_RATE_LIMIT, failedauth.go); nil: unlimited.
	authFailures *authFailures
	// crossOrigin refuses browsers' cross-site state changes on the
	// operators' routes.
	crossOrigin *http.CrossOriginProtection
	// checkoutKey keys the staging checkout pages' simulate tokens.
	checkoutKey []byte
}

// New builds the API with its routes.
func New(d Deps) (*Server, error) {
	s := &Server{
		cfg:        d.Config,
		db:         d.DB,
		store:      models.NewStore(d.DB),
		redis:      d.Redis,
		limiter:    redis_rate.NewLimiter(d.Redis),
		signatures: newSignatureRecords(d.Redis, d.Metrics),
		wallets:    newWalletReads(models.NewStore(d.DB), d.Metrics),
		sealer:     d.Sealer,
		vendors:    d.Vendors,
		breakers:   d.Breakers,
		now:        d.Now,
		metrics:    d.Metrics,
		logins:     newLoginThrottle(d.Redis),

		localLimits:     ratelimit.NewLocal(ratelimit.LocalKeys),
		localSignatures: newLocalSignatures(),
		authFailures:    newAuthFailures(d.Redis, d.Config.AuthFailureRateLimit),

		crossOrigin: newCrossOriginProtection(),
		checkoutKey: d.Config.CheckoutTokenKey(),
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.listenForClientChanges(d)
	if d.Payouts == nil || d.Dispatch == nil || d.Payments == nil {
		return nil, errors.New("api: Deps.Payouts, Deps.Dispatch and Deps.Payments are required")
	}
	if d.Dispatch.Payouts() != d.Payouts {
		return nil, errors.New("api: Deps.Dispatch is not Deps.Payouts' dispatcher")
	}
	s.payouts, s.dispatch, s.payments = d.Payouts, d.Dispatch, d.Payments
	s.acquirer = d.Acquirer
	gin.SetMode(gin.ReleaseMode)
	e := gin.New()
	e.HandleMethodNotAllowed = true
	// A trailing slash is another path: a JSON 404 like any unknown path,
	// not gin's 301 with an HTML body (a redirect would also drop a signed
	// request's method and body in many clients).
	e.RedirectTrailingSlash = false
	e.ContextWithFallback = true
	// Only peers in TRUSTED_PROXIES may set the client IP through
	// X-Forwarded-For; otherwise the socket's address is the client's.
	proxies := make([]string, len(d.Config.TrustedProxies))
	for i, p := range d.Config.TrustedProxies {
		proxies[i] = p.String()
	}
	if err := e.SetTrustedProxies(proxies); err != nil {
		return nil, err
	}
	e.RemoteIPHeaders = []string{"X-Forwarded-For"}
	e.Use(requestContext(), observe(d.Metrics), recoverPanics(), inFlight(d.Config.MaxInFlight), requestDeadline(requestTimeout))
	e.NoRoute(func(c *gin.Context) { fail(c, models.ErrNotFound) })
	e.NoMethod(func(c *gin.Context) { fail(c, errMethodNotAllowed) })
	s.engine, s.handler = e, e
	s.routes(d.QueueRedis)
	return s, nil
}

// Queue is what the API enqueues: payouts' and payments' work.
type Queue interface {
	payouts.Queue
	dispatch.Queue
	payments.Queue
}

func (s *Server) routes(queueRedis asynq.RedisConnOpt) {
	e := s.engine
	e.GET("/healthz", s.handleHealth)
	e.GET("/readyz", s.handleReady)
	e.GET("/openapi.yaml", s.handleOpenAPI)
	if queueRedis != nil {
		s.mountDashboard(queueRedis)
	}
	s.mountProfiler()
	e.GET("/ops/vendors", s.refuseCrossOrigin, s.requireAdmin, s.handleOpsVendors)
	if s.metrics != nil {
		e.GET("/metrics", s.refuseCrossOrigin, s.requireAdmin, gin.WrapH(s.metrics.Handler()))
	}

	v3 := e.Group("/api/v3")
	// Every merchant route: authenticated, then counted against the
	// client's request rate (clientRate), so that requests that fail
	// authentication never spend a client's budget.
	optional := s.authenticate(signatureOptional)
	required := s.authenticate(signatureRequired)
	v3.GET("/wallets", optional, s.clientRate, s.handleWalletList)
	v3.GET("/wallets/:wallet_id/balance", optional, s.clientRate, s.handleWalletBalance)
	v3.GET("/wallets/:wallet_id/banks", optional, s.clientRate, s.handleWalletBanks)
	v3.GET("/wallets/:wallet_id/transactions", optional, s.clientRate, s.handleWalletStatement)
	v3.GET("/wallets/:wallet_id/transactions/export", optional, s.clientRate, s.handleWalletStatementExport)
	v3.POST("/debug/signature-check", s.authenticate(signatureDiagnostic), s.rateLimit("signature-check", redis_rate.PerMinute(20)), s.handleSignatureCheck)
	// Each quote is a real-time account inquiry: limited per client so that
	// accounts cannot be enumerated at full speed (QUOTE_RATE_LIMIT).
	v3.POST("/disbursements/quote", required, s.clientRate, s.perMinute("quote", s.cfg.QuoteRateLimit), s.handleDisbursementQuote)
	v3.POST("/disbursements", required, s.clientRate, s.handleDisbursementCreate)
	v3.GET("/disbursements", optional, s.clientRate, s.handleDisbursementList)
	v3.GET("/disbursements/:id", optional, s.clientRate, s.handleDisbursementGet)
	v3.GET("/payments", optional, s.clientRate, s.handlePaymentList)
	v3.GET("/payments/:id", optional, s.clientRate, s.handlePaymentGet)
	e.POST("/api/v1/payments", optional, s.clientRate, s.handlePaymentCreate)

	// Vendors push payout results here, the acquirer payment results;
	// each is verified by its own scheme.
	e.POST("/vendor-callbacks/:vendor", s.handleVendorCallback)
	// A SNAP bank's, snap:<bank> without the colon some bank portals
	// refuse in a URL; /vendor-callbacks/snap:<bank> works too.
	e.POST("/vendor-callbacks/snap/:bank", s.handleVendorCallback)
	e.POST("/acquirer-callbacks/:acquirer", s.handleAcquirerCallback)
	s.checkoutRoutes()
}

// listenForClientChanges turns on the cache of authenticated callers and,
// with Redis, drops a client from it as soon as a change is announced. The
// cache's TTL runs on the wall clock, not on the injected business clock.
func (s *Server) listenForClientChanges(d Deps) {
	s.principals = authcache.New(d.Config.AuthCacheTTL, nil)
	if s.principals == nil || d.Redis == nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	s.principalsListening = make(chan struct{})
	go func() {
		defer close(done)
		s.principals.Listen(ctx, d.Redis, s.principalsListening)
	}()
	s.closers = append(s.closers, func() error { cancel(); <-done; return nil })
}

// Handler returns the http.Handler serving the API.
func (s *Server) Handler() http.Handler { return s.handler }

// Close releases what the server opened (the dashboard's Redis client).
func (s *Server) Close() error {
	for _, c := range s.closers {
		c()
	}
	return nil
}

// requestTimeout bounds a request's work (requestDeadline), below the
// server's WriteTimeout and far above any sensible DISBURSEMENT_SUBMIT_WAIT
// (a longer wait is cut short by it: the create is answered with the
// payout as it then stands, as when the wait ends).
const requestTimeout = 45 * time.Second

// ListenAndServe serves on addr until ctx is cancelled, then shuts down
// gracefully: in-flight requests get up to 15 s to finish.
func ListenAndServe(ctx context.Context, addr string, h http.Handler, ready func(addr string)) error {
	srv := &http.Server{
		Addr:              addr,
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
	}
	ln, err := listen(addr)
	if err != nil {
		return err
	}
	if ready != nil {
		ready(ln.Addr().String())
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	slog.Info("shutting down HTTP server")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	return srv.Shutdown(shutdownCtx)
}
