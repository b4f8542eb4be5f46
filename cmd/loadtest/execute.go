package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/payoutd/payoutd/admin"
	"github.com/payoutd/payoutd/credentials"
	"github.com/payoutd/payoutd/database"
	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors/sandbox"
)

// Values of result.Server.
const (
	serverSeparate  = "separate process"
	serverExternal  = "external"
	serverInProcess = "in-process handler"
)

// execute prepares the database and the server, runs the load and prints
// the report. Progress goes to stderr, the report to stdout.
func execute(ctx context.Context, o options, stdout, stderr io.Writer) (*result, error) {
	info, _ := lookupScenario(o.scenario)
	sc := info.new()
	env, _ := models.ParseEnvironment(o.env)
	key, err := secretsKey(o.secretsKey)
	if err != nil {
		return nil, err
	}
	sealer, err := credentials.NewSealer(key)
	if err != nil {
		return nil, err
	}

	selfContained := o.target == ""
	if selfContained {
		progress(stderr, "recreating database %s", redact(o.databaseURL))
		if err := recreateDatabase(ctx, o.databaseURL); err != nil {
			return nil, err
		}
	}
	db, err := database.Open(o.databaseURL)
	if err != nil {
		return nil, err
	}
	defer closeDB(db)
	if selfContained {
		if _, err := database.Migrate(ctx, db); err != nil {
			return nil, err
		}
	} else if pending, err := database.PendingMigrations(ctx, db); err != nil {
		return nil, fmt.Errorf("read migration state of -database-url: %w", err)
	} else if pending > 0 {
		return nil, fmt.Errorf("-database-url is %d migration(s) behind: is it the database of -target?", pending)
	}
	progress(stderr, "provisioning %d clients with a funded wallet each", o.clients)
	deps := admin.Deps{DB: db, Sealer: sealer, Env: env, Vendors: sandbox.Registry(sandbox.Options{})}
	fixture, err := provision(ctx, deps, o.clients)
	if err != nil {
		return nil, err
	}
	if err := sc.Prepare(ctx, fixture); err != nil {
		return nil, err
	}

	window := &cpuWindow{}
	plan := loadPlan{scenario: sc, concurrency: o.concurrency, warmup: o.warmup, duration: o.duration, window: window}
	desc := runDescription{scenario: info, options: o}
	var profile *inProcessProfile
	switch {
	case o.inprocessProfile != "":
		a, err := newInProcessAPI(db, o.redisURL, env, sealer)
		if err != nil {
			return nil, err
		}
		defer a.close()
		profile = &inProcessProfile{path: o.inprocessProfile}
		plan.window = allHooks{window, profile}
		plan.base = "http://payoutd.invalid" // never dialled
		plan.send = handlerSender(a.handler)
		desc.server = serverInProcess
		desc.accessLogs = new(false)
	case o.target != "":
		send, closeIdle := httpSender(o.concurrency)
		defer closeIdle()
		plan.base = strings.TrimRight(o.target, "/")
		plan.send = send
		desc.server = serverExternal
		desc.where = plan.base
	default:
		progress(stderr, "building cmd/payoutd and starting `payoutd api`")
		srv, err := startServer(ctx, serverConfig{
			databaseURL: o.databaseURL, redisURL: o.redisURL, env: env, secretsKey: key, extraEnv: o.serverEnv,
		}, stderr)
		if err != nil {
			return nil, err
		}
		defer func() {
			if err := srv.stop(); err != nil {
				progress(stderr, "warning: %v", err)
			}
		}()
		send, closeIdle := httpSender(o.concurrency)
		defer closeIdle()
		plan.base = srv.base
		plan.send = send
		plan.died = srv.exited
		window.serverPID = srv.pid()
		desc.server = serverSeparate
		desc.where = srv.base
		desc.accessLogs = new(accessLogsOn(o.serverEnv))
		desc.revision = srv.revision
	}

	progress(stderr, "running %s: %d workers, warm-up %s, then measuring %s", o.scenario, o.concurrency, o.warmup, o.duration)
	m, err := runLoad(ctx, plan)
	if err != nil {
		return nil, err
	}
	res := newResult(desc, m, window.usage())
	if profile != nil {
		if profile.err != nil {
			return nil, fmt.Errorf("-inprocess-profile: %w", profile.err)
		}
		res.Allocs = profile.perRequest(res.Requests)
	}
	printReport(stdout, desc, res, m)
	return res, nil
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
