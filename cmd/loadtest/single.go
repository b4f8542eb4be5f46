package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
)

// Values of result.Server.
const (
	serverSeparate  = "separate process"
	serverExternal  = "external"
	serverInProcess = "in-process handler"
)

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
	r.undo.add(func() { stopLogged(srv, stderr) })
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
