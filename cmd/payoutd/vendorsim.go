package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/payoutd/payoutd/internal/database"
	"github.com/payoutd/payoutd/internal/logging"
	"github.com/payoutd/payoutd/internal/safeurl"
	"github.com/payoutd/payoutd/vendors/sandbox"
	"github.com/payoutd/payoutd/vendors/vendorsim"
	"github.com/payoutd/payoutd/vendors/xendit"
	"github.com/payoutd/payoutd/vendors/xendit/xenditsim"
)

// runVendorSim serves simbank and simwallet over HTTP (package vendorsim)
// until ctx is cancelled, and reports final payouts to
// VENDORSIM_CALLBACK_URL/<vendor> when it is set. Configuration:
// VENDORSIM_ADDR (default :8090), VENDORSIM_TOKEN (required: the bearer
// token clients send), VENDORSIM_CALLBACK_SECRET (required, another secret:
// the key callbacks are signed with), VENDORSIM_CALLBACK_URL (optional),
// VENDORSIM_DATABASE_URL (optional: keep the payouts in that database's
// sandbox_payouts table, migrated at start, so that they outlive the
// process; default in memory), VENDORSIM_ANSWER_DELAY (optional: answer
// each payout submit that long after recording it; default 0) and
// SANDBOX_COMPLETE_AFTER (default 2s). Flags: --addr overrides
// VENDORSIM_ADDR; --provider xendit serves a Xendit simulator instead
// (runXenditSim), --provider snap --bank B a SNAP BI bank (runSnapSim).
func runVendorSim(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	fs := flag.NewFlagSet("payoutd vendorsim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	provider := fs.String("provider", "sandbox", "sandbox (simbank, simwallet), xendit (Xendit Payouts v2) or snap (a SNAP BI bank, with --bank)")
	bank := fs.String("bank", "", "snap: the bank's slug (bca, bri, ...), whose SNAP_<BANK>_* variables are read")
	addr := fs.String("addr", "", "listen address (default VENDORSIM_ADDR, else :8090)")
	callbackURL := fs.String("callback-url", "", "xendit: where webhooks go (default XENDIT_CALLBACK_URL, else VENDORSIM_CALLBACK_URL/xendit); snap: where notifications go (default VENDORSIM_CALLBACK_URL/snap/<bank>)")
	if slices.ContainsFunc(args, isHelpFlag) {
		fs.SetOutput(stdout)
		fmt.Fprintln(stdout, "usage: payoutd vendorsim [flags]\n\nServes simulated payout vendors over HTTP until SIGINT or SIGTERM (see README.md,\nSandbox vendor simulator).\n\nflags:")
		fs.PrintDefaults()
		return errHelpShown
	}
	fs.SetOutput(io.Discard) // a flag error is one line, below
	if err := fs.Parse(args); err != nil {
		return commandLineError{err}
	}
	if fs.NArg() > 0 {
		return commandLineError{fmt.Errorf("unexpected arguments %q", fs.Args())}
	}
	if *addr != "" {
		outer := getenv
		getenv = func(k string) string {
			if k == "VENDORSIM_ADDR" {
				return *addr
			}
			return outer(k)
		}
	}
	if *bank != "" && *provider != "snap" {
		return errors.New("--bank is only for --provider snap")
	}
	switch *provider {
	case "sandbox":
	case "xendit":
		return runXenditSim(ctx, *callbackURL, stdout, stderr, getenv)
	case "snap":
		return runSnapSim(ctx, *bank, *callbackURL, stdout, stderr, getenv)
	default:
		return fmt.Errorf("--provider %q: want sandbox, xendit or snap", *provider)
	}
	settings, err := readVendorSimSettings(getenv)
	if err != nil {
		return err
	}
	log := logging.New(stderr, slog.LevelInfo)
	store, closeStore, err := vendorSimStore(ctx, settings.databaseURL)
	if err != nil {
		return err
	}
	defer closeStore()

	sim, err := vendorsim.NewServer(vendorsim.ServerOptions{
		Token:          settings.token,
		CallbackSecret: settings.callbackSecret,
		Sandbox:        sandbox.Options{CompleteAfter: settings.completeAfter, Store: store},
		CallbackURL:    settings.callbackURL,
		Logger:         log,
	})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", settings.addr)
	if err != nil {
		return err
	}
	srv := simServer(answerLate(sim, settings.answerDelay), log)
	log.Info("vendorsim listening", slog.String("addr", ln.Addr().String()),
		slog.String("vendors", sandbox.SimBank+","+sandbox.SimWallet), slog.Duration("answer_delay", settings.answerDelay),
		slog.String("callback_url", safeurl.Display(settings.callbackURL)), slog.Duration("complete_after", settings.completeAfter),
		slog.Bool("durable", store != nil))
	fmt.Fprintf(stdout, "vendorsim: simbank and simwallet on http://%s/v1/{simbank,simwallet} (sandbox only, no real money)\n", ln.Addr())

	return serveSim(ctx, sim.Run, srv, ln, log)
}

// vendorSimSettings are runVendorSim's configuration, read from the
// environment.
type vendorSimSettings struct {
	addr           string
	token          string
	callbackSecret string
	callbackURL    string
	completeAfter  time.Duration
	// databaseURL keeps the sandbox payouts (VENDORSIM_DATABASE_URL);
	// empty: in memory.
	databaseURL string
	// answerDelay holds each payout submit's answer after the payout is
	// recorded (VENDORSIM_ANSWER_DELAY).
	answerDelay time.Duration
}

// readVendorSimSettings reads and checks runVendorSim's variables, stopping
// at the first problem.
func readVendorSimSettings(getenv func(string) string) (vendorSimSettings, error) {
	s := vendorSimSettings{addr: strings.TrimSpace(getenv("VENDORSIM_ADDR")), completeAfter: 2 * time.Second}
	if s.addr == "" {
		s.addr = ":8090"
	}
	if strings.TrimSpace(getenv("VENDORSIM_SECRET")) != "" {
		return s, errors.New("VENDORSIM_SECRET is no longer read: set VENDORSIM_TOKEN (the bearer token clients send) and VENDORSIM_CALLBACK_SECRET (the key callbacks are signed with), two different secrets")
	}
	s.token = strings.TrimSpace(getenv("VENDORSIM_TOKEN"))
	if s.token == "" {
		return s, errors.New("VENDORSIM_TOKEN is required: the token clients send as \"Authorization: Bearer <token>\" (for example: openssl rand -hex 32)")
	}
	s.callbackSecret = strings.TrimSpace(getenv("VENDORSIM_CALLBACK_SECRET"))
	if s.callbackSecret == "" {
		return s, errors.New("VENDORSIM_CALLBACK_SECRET is required: the key callbacks are signed with, not the token (for example: openssl rand -hex 32)")
	}
	if s.token == s.callbackSecret {
		return s, errors.New("VENDORSIM_TOKEN and VENDORSIM_CALLBACK_SECRET must differ: whoever may call the simulator must not be able to sign its callbacks")
	}
	s.callbackURL = strings.TrimSpace(getenv("VENDORSIM_CALLBACK_URL"))
	if s.callbackURL != "" {
		u, err := url.Parse(s.callbackURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return s, fmt.Errorf("%s: want an http(s) URL such as http://127.0.0.1:8080/vendor-callbacks", safeurl.Setting("VENDORSIM_CALLBACK_URL", s.callbackURL))
		}
	}
	s.databaseURL = strings.TrimSpace(getenv("VENDORSIM_DATABASE_URL"))
	if s.databaseURL != "" {
		if _, err := database.DialectOf(s.databaseURL); err != nil {
			return s, errors.New("VENDORSIM_DATABASE_URL must start with postgres://, postgresql://, sqlite:// or file:")
		}
	}
	if v := strings.TrimSpace(getenv("VENDORSIM_ANSWER_DELAY")); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 || d > time.Minute {
			return s, fmt.Errorf("VENDORSIM_ANSWER_DELAY=%q: want a Go duration from 0 to 1m such as 300ms", v)
		}
		s.answerDelay = d
	}
	var err error
	s.completeAfter, err = simCompleteAfter(getenv, s.completeAfter)
	return s, err
}

// answerLate returns h, or with a delay h answering each payout submit
// (POST /v1/{vendor}/payouts) that long after the vendor recorded it: a
// slow vendor, which has made the payout while its answer is still to
// come, so that a process killed meanwhile (the caller or the vendor
// itself) leaves a payout made and unanswered. Other requests are
// answered at once.
func answerLate(h http.Handler, delay time.Duration) http.Handler {
	if delay <= 0 {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
		if r.Method != http.MethodPost || len(parts) != 3 || parts[0] != "v1" || parts[2] != "payouts" {
			h.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		// A dropped answer (1000000007) cannot hijack a recorder: the
		// handler aborts, and so does this request, unanswered.
		h.ServeHTTP(rec, r)
		time.Sleep(delay)
		for k, vs := range rec.Header() {
			w.Header()[k] = vs
		}
		w.WriteHeader(rec.Code)
		w.Write(rec.Body.Bytes())
	})
}

// vendorSimStore is where the simulator keeps the payouts it accepted: nil
// (each vendor's memory, lost with the process) without a database URL,
// else a sandbox.DBStore over that database, migrated first. A real
// vendor's payouts outlive its processes: with a database, a simulator
// killed and restarted still knows every payout it accepted, so the
// service's status checks and its resolution of unanswered submits get
// the truth instead of "unknown payout". release closes the database.
func vendorSimStore(ctx context.Context, databaseURL string) (store sandbox.Store, release func(), err error) {
	if databaseURL == "" {
		return nil, func() {}, nil
	}
	db, err := database.Open(databaseURL)
	if err != nil {
		return nil, nil, fmt.Errorf("VENDORSIM_DATABASE_URL: %w", err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		return nil, nil, err
	}
	if _, err := database.Migrate(ctx, db); err != nil {
		sqlDB.Close()
		return nil, nil, fmt.Errorf("VENDORSIM_DATABASE_URL: %w", err)
	}
	return sandbox.NewDBStore(db), func() { sqlDB.Close() }, nil
}

// serveSim runs a simulator's callback loop and its HTTP server on ln
// until ctx ends, then shuts the server down, giving requests in flight
// 15 s.
func serveSim(ctx context.Context, loop func(context.Context) error, srv *http.Server, ln net.Listener, log *slog.Logger) error {
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return loop(gctx) })
	g.Go(func() error {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	})
	g.Go(func() error {
		<-gctx.Done()
		log.Info("vendorsim shutting down")
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		return srv.Shutdown(shutdownCtx)
	})
	return g.Wait()
}

// simServer is the HTTP server a simulator is served by, with the
// timeouts and header limit of the service's own servers.
func simServer(h http.Handler, log *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}

// runXenditSim serves xenditsim (a Xendit Payouts v2 simulator, sandbox
// only) on VENDORSIM_ADDR until ctx ends, and POSTs its webhooks with
// x-callback-token every 200 ms. Configuration: XENDIT_SECRET_KEY
// (required: the basic-auth username clients send), XENDIT_CALLBACK_TOKEN
// (required, another secret: the webhooks' x-callback-token), the callback
// URL (--callback-url, XENDIT_CALLBACK_URL, or VENDORSIM_CALLBACK_URL with
// /xendit appended; optional) and SANDBOX_COMPLETE_AFTER.
func runXenditSim(ctx context.Context, callbackURL string, stdout, stderr io.Writer, getenv func(string) string) error {
	s, err := readXenditSimSettings(callbackURL, getenv)
	if err != nil {
		return err
	}
	log := logging.New(stderr, slog.LevelInfo)
	sim, err := xenditsim.New(xenditsim.Options{SecretKey: s.token, CallbackToken: s.callbackSecret,
		CallbackURL: s.callbackURL, CompleteAfter: s.completeAfter, Logger: log})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		return err
	}
	srv := simServer(sim, log)
	log.Info("vendorsim listening", slog.String("addr", ln.Addr().String()), slog.String("provider", "xendit"),
		slog.String("callback_url", safeurl.Display(s.callbackURL)), slog.Duration("complete_after", s.completeAfter))
	fmt.Fprintf(stdout, "vendorsim: xendit (Payouts v2) on http://%s (set XENDIT_BASE_URL to it; sandbox only, no real money)\n", ln.Addr())

	webhooks := func(ctx context.Context) error { return sim.Run(ctx, 200*time.Millisecond) }
	return serveSim(ctx, webhooks, srv, ln, log)
}

// readXenditSimSettings reads and checks runXenditSim's variables, stopping
// at the first problem; token and callbackSecret are the secret key and the
// callback token.
func readXenditSimSettings(callbackURL string, getenv func(string) string) (vendorSimSettings, error) {
	s := vendorSimSettings{addr: strings.TrimSpace(getenv("VENDORSIM_ADDR")), completeAfter: 2 * time.Second}
	if s.addr == "" {
		s.addr = ":8090"
	}
	s.token = strings.TrimSpace(getenv("XENDIT_SECRET_KEY"))
	if s.token == "" {
		return s, errors.New("XENDIT_SECRET_KEY is required with --provider xendit: the secret key clients send as the basic-auth username (the same value as the service's XENDIT_SECRET_KEY)")
	}
	s.callbackSecret = strings.TrimSpace(getenv("XENDIT_CALLBACK_TOKEN"))
	if s.callbackSecret == "" {
		return s, errors.New("XENDIT_CALLBACK_TOKEN is required with --provider xendit: the x-callback-token of the webhooks, not the secret key")
	}
	if s.token == s.callbackSecret {
		return s, errors.New("XENDIT_SECRET_KEY and XENDIT_CALLBACK_TOKEN must differ: whoever may call the simulator must not be able to forge its webhooks")
	}
	s.callbackURL = strings.TrimSpace(callbackURL)
	if s.callbackURL == "" {
		s.callbackURL = strings.TrimSpace(getenv("XENDIT_CALLBACK_URL"))
	}
	if s.callbackURL == "" {
		if base := strings.TrimSpace(getenv("VENDORSIM_CALLBACK_URL")); base != "" {
			s.callbackURL = strings.TrimRight(base, "/") + "/" + xendit.Name
		}
	}
	if s.callbackURL != "" {
		u, err := url.Parse(s.callbackURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return s, fmt.Errorf("%s: want an http(s) URL such as http://127.0.0.1:8080/vendor-callbacks/xendit", safeurl.Setting("the xendit callback URL", s.callbackURL))
		}
	}
	var err error
	s.completeAfter, err = simCompleteAfter(getenv, s.completeAfter)
	return s, err
}

// simCompleteAfter reads SANDBOX_COMPLETE_AFTER, how long a simulator
// keeps an ordinary payout in flight; def when it is unset.
func simCompleteAfter(getenv func(string) string, def time.Duration) (time.Duration, error) {
	v := strings.TrimSpace(getenv("SANDBOX_COMPLETE_AFTER"))
	if v == "" {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("SANDBOX_COMPLETE_AFTER=%q: want a non-negative Go duration such as 2s or 1m", v)
	}
	return d, nil
}
