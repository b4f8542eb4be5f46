package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"gorm.io/gorm"

	"github.com/payoutd/payoutd/admin"
	"github.com/payoutd/payoutd/internal/credentials"
	"github.com/payoutd/payoutd/internal/database"
	"github.com/payoutd/payoutd/models"
)

// Values of result.Server.
const (
	serverSeparate  = "separate process"
	serverExternal  = "external"
	serverInProcess = "in-process handler"
)

// execute runs the scenario o names and prints its report. Progress goes
// to stderr, the report to stdout. clean is false when a request failed.
func execute(ctx context.Context, o options, stdout, stderr io.Writer) (clean bool, err error) {
	info, _ := lookupScenario(o.scenario)
	s, err := setUp(ctx, o, info, stderr)
	if err != nil {
		return false, err
	}
	defer s.close()
	if info.name == "overload" {
		return executeOverload(ctx, s, info, stdout, stderr)
	}
	if info.new == nil {
		return executeSuite(ctx, s, info, stdout, stderr)
	}
	res, err := executeSingle(ctx, s, info, stdout, stderr)
	if err != nil {
		return false, err
	}
	return res.Errors == 0 && res.WarmupErrors == 0, nil
}

// runSetup is what every run starts from: the secrets key, the database
// (recreated and migrated when self-contained) and the provisioned clients.
type runSetup struct {
	o             options
	env           models.Environment
	key           []byte
	sealer        *credentials.Sealer
	db            *gorm.DB
	fixture       *Fixture
	selfContained bool
}

func setUp(ctx context.Context, o options, info scenarioInfo, stderr io.Writer) (*runSetup, error) {
	env, _ := models.ParseEnvironment(o.env)
	key, err := secretsKey(o.secretsKey)
	if err != nil {
		return nil, err
	}
	sealer, err := credentials.NewSealer(key)
	if err != nil {
		return nil, err
	}
	s := &runSetup{o: o, env: env, key: key, sealer: sealer, selfContained: o.target == ""}
	if s.selfContained {
		progress(stderr, "recreating database %s", redact(o.databaseURL))
		if err := recreateDatabase(ctx, o.databaseURL); err != nil {
			return nil, err
		}
	}
	if s.db, err = database.Open(o.databaseURL); err != nil {
		return nil, err
	}
	if err := s.prepare(ctx, info, stderr); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

func (s *runSetup) prepare(ctx context.Context, info scenarioInfo, stderr io.Writer) error {
	if s.selfContained {
		if _, err := database.Migrate(ctx, s.db); err != nil {
			return err
		}
	} else if pending, err := database.PendingMigrations(ctx, s.db); err != nil {
		return fmt.Errorf("read migration state of -database-url: %w", err)
	} else if pending > 0 {
		return fmt.Errorf("-database-url is %d migration(s) behind: is it the database of -target?", pending)
	}
	if info.flushesRedis() && s.selfContained {
		progress(stderr, "flushing Redis database %s: no queue of an earlier run remains", redact(s.o.redisURL))
		if err := flushRedis(ctx, s.o.redisURL); err != nil {
			return err
		}
	}
	progress(stderr, "provisioning %d clients with a funded wallet each", s.o.clients)
	rail, _ := lookupRail(s.o.rail)
	deps := admin.Deps{DB: s.db, Sealer: s.sealer, Env: s.env, Vendors: provisionRegistry(rail)}
	var err error
	s.fixture, err = provision(ctx, deps, s.o.clients, rail.vendor)
	return err
}

func (s *runSetup) close() { closeDB(s.db) }

// serverConfig is the environment of the api and worker the tool starts.
func (s *runSetup) serverConfig(info scenarioInfo) serverConfig {
	return serverConfig{databaseURL: s.o.databaseURL, redisURL: s.o.redisURL, env: s.env, secretsKey: s.key,
		extraEnv: serverEnv(s.o, info)}
}

// serverEnv is what the tool adds to a started server's environment: for
// creates, no wait for the worker and a sandbox vendor that pays at once;
// then -server-env, which may override them.
func serverEnv(o options, info scenarioInfo) []string {
	var env []string
	if info.creates {
		env = append(env, "DISBURSEMENT_SUBMIT_WAIT=0s", "SANDBOX_COMPLETE_AFTER="+o.sandboxCompleteAfter.String())
	}
	return append(env, o.serverEnv...)
}

// executeSingle runs one closed-loop scenario and prints its report.
func executeSingle(ctx context.Context, s *runSetup, info scenarioInfo, stdout, stderr io.Writer) (*result, error) {
	o := s.o
	sc := info.new(o)
	if err := sc.Prepare(ctx, s.fixture); err != nil {
		return nil, err
	}
	var ceil *ceilings
	if info.selectOnly {
		// Before the server starts, so that pgbench has the machine to itself.
		var err error
		if ceil, err = measureSelectOnly(ctx, s, stderr); err != nil {
			return nil, err
		}
	}
	r := newSingleRun(o, info, sc)
	r.desc.ceilings = ceil
	defer r.undo.run()
	var err error
	switch {
	case o.inprocessProfile != "":
		err = r.useInProcessHandler(s, info)
	case o.target != "":
		r.useExternalServer(o.target)
	default:
		err = r.useSeparateServer(ctx, s, info, stderr)
	}
	if err != nil {
		return nil, err
	}

	progress(stderr, "running %s: %d workers, warm-up %s, then measuring %s", o.scenario, r.plan.concurrency, o.warmup, o.duration)
	checkpoint(ctx, s.db, stderr)
	m, err := runLoad(ctx, r.plan)
	if err != nil {
		return nil, err
	}
	res := newResult(r.desc, m, r.window.usage())
	if r.profile != nil {
		if r.profile.err != nil {
			return nil, fmt.Errorf("-inprocess-profile: %w", r.profile.err)
		}
		res.Allocs = r.profile.perRequest(res.Requests)
	}
	if r.stages != nil {
		res.Groups, res.GroupErrors = r.stages.ev.Groups, r.stages.ev.Errors
	}
	printReport(stdout, r.desc, res, m)
	return res, nil
}

// measureSelectOnly measures the select-only ceiling the balance reads
// are a ratio of. With -target it measures none: the tool makes no tables
// of its own in a database it did not create.
func measureSelectOnly(ctx context.Context, s *runSetup, stderr io.Writer) (*ceilings, error) {
	if !s.selfContained {
		c := &ceilings{Unavailable: "not measured with -target (the tool makes no tables of its own in the server's database)"}
		progress(stderr, "ceiling unavailable: %s", c.Unavailable)
		return c, nil
	}
	return measureCeilings(ctx, s.o, s.db, stderr, selectOnlyRun(s.o))
}

// singleRun is what executeSingle assembles before the load starts: the
// plan, the description the report prints, and what to undo once the run
// is over, whatever the server it runs against.
type singleRun struct {
	plan    loadPlan
	desc    runDescription
	window  *cpuWindow
	profile *inProcessProfile // with -inprocess-profile
	stages  *groupStages      // with -server-profile: the api's group commits over the window
	undo    cleanups
}

func newSingleRun(o options, info scenarioInfo, sc Scenario) *singleRun {
	concurrency := o.concurrencyFor(info)
	window := &cpuWindow{}
	return &singleRun{
		plan:   loadPlan{scenario: sc, concurrency: concurrency, warmup: o.warmup, duration: o.duration, window: window, expectRate: info.goalRate},
		desc:   runDescription{scenario: info, options: o, concurrency: concurrency, serverEnv: serverEnv(o, info)},
		window: window,
	}
}

// useInProcessHandler runs the load against the api's handler built in
// this process, called without HTTP or TCP, and profiles it
// (-inprocess-profile: the CPU of the measured window, the allocations per
// request).
func (r *singleRun) useInProcessHandler(s *runSetup, info scenarioInfo) error {
	o := s.o
	a, err := newInProcessAPI(s.db, o.redisURL, s.env, s.sealer, info.creates, o.sandboxCompleteAfter)
	if err != nil {
		return err
	}
	r.undo.add(a.close)
	r.profile = &inProcessProfile{path: o.inprocessProfile}
	r.plan.window = allHooks{r.window, r.profile}
	r.plan.base = "http://payoutd.invalid" // never dialled
	r.plan.send = handlerSender(a.handler)
	r.desc.server = serverInProcess
	r.desc.accessLogs = new(false)
	return nil
}

// useExternalServer runs the load against a server already running at
// target (-target), which the tool neither starts nor configures.
func (r *singleRun) useExternalServer(target string) {
	send, closeIdle := httpSender(r.plan.concurrency)
	r.undo.add(closeIdle)
	r.plan.base = strings.TrimRight(target, "/")
	r.plan.send = send
	r.desc.serverEnv = nil // the tool sets nothing of an external server
	r.desc.server = serverExternal
	r.desc.where = r.plan.base
}

// useSeparateServer builds cmd/payoutd and starts `payoutd api` in its own
// process, profiled when -server-profile asks, and runs the load against
// it over HTTP.
func (r *singleRun) useSeparateServer(ctx context.Context, s *runSetup, info scenarioInfo, stderr io.Writer) error {
	o := s.o
	progress(stderr, "building cmd/payoutd and starting `payoutd api`")
	bin, err := buildPayoutd(ctx)
	if err != nil {
		return err
	}
	r.undo.add(bin.remove)
	cfg := s.serverConfig(info)
	var serverProf *serverProfile
	if o.serverProfile != "" {
		if serverProf, err = newServerProfile(o.serverProfile, o.duration); err != nil {
			return err
		}
		cfg.extraEnv = append(cfg.extraEnv, serverProf.env()...)
		r.stages = &groupStages{prof: serverProf, ev: &phaseEvidence{}}
		r.plan.window = allHooks{r.window, serverProf, r.stages}
		r.undo.add(func() {
			if serverProf.err != nil {
				progress(stderr, "warning: -server-profile: %v", serverProf.err)
			}
		})
	}
	srv, err := startServer(ctx, bin, cfg, stderr)
	if err != nil {
		return err
	}
	if serverProf != nil {
		serverProf.base = srv.base
	}
	r.undo.add(func() {
		if err := srv.stop(); err != nil {
			progress(stderr, "warning: %v", err)
		}
	})
	send, closeIdle := httpSender(r.plan.concurrency)
	r.undo.add(closeIdle)
	r.plan.base = srv.base
	r.plan.send = send
	r.plan.died = srv.exited
	r.window.serverPID = srv.pid()
	r.desc.server = serverSeparate
	r.desc.where = srv.base
	r.desc.accessLogs = new(accessLogsOn(r.desc.serverEnv))
	r.desc.revision = bin.revision
	return nil
}

// cleanups are what a run set up and must undo, undone last first as
// deferred calls are.
type cleanups []func()

func (c *cleanups) add(f func()) { *c = append(*c, f) }

func (c *cleanups) run() {
	for i := len(*c) - 1; i >= 0; i-- {
		(*c)[i]()
	}
}

// secretsKey decodes the -secrets-key flag or, when it is empty, makes a
// random key (the tool then starts the server with it).
func secretsKey(flagValue string) ([]byte, error) {
	if flagValue != "" {
		key, err := credentials.ParseSecretsKey(flagValue)
		if err != nil {
			return nil, fmt.Errorf("-secrets-key: %w", err)
		}
		return key, nil
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	return key, nil
}

// accessLogsOn tells whether the server, started with LOG_LEVEL=warn and
// then extra, writes its per-request access log (an info line).
func accessLogsOn(extra []string) bool {
	level := slog.LevelWarn
	for _, kv := range extra {
		if k, v, _ := strings.Cut(kv, "="); k == "LOG_LEVEL" {
			var l slog.Level
			if l.UnmarshalText([]byte(strings.TrimSpace(v))) == nil {
				level = l
			}
		}
	}
	return level <= slog.LevelInfo
}

func progress(w io.Writer, format string, args ...any) {
	fmt.Fprintf(w, "loadtest: "+format+"\n", args...)
}
