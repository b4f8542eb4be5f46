// Command loadtest measures the payout API under load and prints
// requests/s, p50, p90, p99 and max latency and the error count, then the
// same figures as one line of JSON to paste into notes.
//
// Usage:
//
//	go run ./cmd/loadtest                        # balance, 32 workers, 2 s warm-up + 10 s, over a pgbench select-only ceiling
//	go run ./cmd/loadtest -scenario disbursements  # pgbench ceilings, creates, drain: one table
//	go run ./cmd/loadtest -scenario disbursements -rail xendit  # the same on the Xendit simulator
//	go run ./cmd/loadtest -scenario drain -rail snap  # creates and drain on a SNAP BI bank's simulator
//	go run ./cmd/loadtest -scenario create-hot -concurrency 16
//	go run ./cmd/loadtest -scenario payments     # POST /api/v1/payments, 16 workers
//	go run ./cmd/loadtest -scenario all          # disbursements plus balance and payments: one table
//	go run ./cmd/loadtest -scenario concurrent -evidence  # api and worker together, with PostgreSQL's evidence
//	go run ./cmd/loadtest -concurrency 32 -duration 30s
//	go run ./cmd/loadtest -server-env LOG_LEVEL=info   # with access logs
//	go run ./cmd/loadtest -inprocess-profile cpu.pprof && go tool pprof -top cpu.pprof
//	go run ./cmd/loadtest -scenario create-many -server-profile api.pprof
//	go run ./cmd/loadtest -h                     # every flag and scenario
//
// The load is a closed loop: -concurrency workers each send requests back
// to back over keep-alive connections for -warmup (not measured) and then
// -duration (measured). Latency is the time from sending a request to
// having read its whole response; every successful request of the
// measured window is one sample and the percentiles are exact (all samples
// sorted). requests/s counts successful requests only. Each request is
// signed afresh (x-signature at time.Now()) with the x-api-key of one of
// -clients merchant clients, taken round-robin.
//
// Scenarios balance, create-many and create-hot are one closed loop each.
// The create scenarios send signed POST /api/v3/disbursements with a fresh
// Idempotency-Key per request; each wallet's body is serialised once and
// every request signs those exact bytes. create-many goes round-robin over
// every client's wallet, create-hot sends everything to one wallet of one
// client; the wallets are funded generously first. The server runs with
// DISBURSEMENT_SUBMIT_WAIT=0, so a create is answered once stored, locked
// and enqueued, without waiting for the worker, and the tool flushes the
// Redis database of -redis-url (its own, database 9 by default; never
// database 0) so that no queue of an earlier run remains.
//
// Scenario balance first measures the machine's own ceiling for a read
// with pgbench (select-only: the shape of pgbench -S, one primary-key
// SELECT of a wallet-like row without BEGIN and END, over -pgbench-rows
// rows of lt_wallets in the load database) before the server starts, and
// reports the balance reads' rate as a ratio of it, with the goal of at
// least 0.3. Without pgbench it says the ceiling is
// unavailable and goes on without the ratio; with -target it measures
// none (it makes no tables of its own in the server's database).
//
// Scenario payments sends POST /api/v1/payments with {"price": 150000,
// "playerId": ...}, round-robin over the clients, each body serialised
// once; each client's one provisioned wallet is its default (checked
// before the run), which the payments are credited to. Requests carry
// x-signature over the body, or only x-timestamp with -payment-auth
// timestamp. A create is answered once the row is stored and
// payment:expire enqueued; the tool flushes its Redis database first.
// Scenario all is disbursements with a balance phase before create-many
// (the reads of scenario balance, its rate a ratio of the select-only
// ceiling, measured first among the ceilings) and a payments phase after
// create-hot, its rate a ratio of the spread ceiling. Scenario
// disbursements has no balance phase and measures no select-only ceiling.
//
// Scenario drain runs create-many, stops the api and starts `payoutd
// worker` as a separate process on the queued payouts, with the sandbox
// vendor paying at once (SANDBOX_COMPLETE_AFTER=-sandbox-complete-after);
// it polls the database until every payout is final or -drain-duration
// has passed since the first SUCCESS, and reports payouts/s from the first
// to the last SUCCESS (their completed_at). Scenario disbursements first
// measures the machine's own ceiling with pgbench (a script of BEGIN, one
// conditional UPDATE of a wallet-like row and one INSERT, END, in tables
// lt_wallets and lt_ledger of the load database; once spread over
// -pgbench-rows rows, once on one hot row), then runs create-many,
// create-hot and the drain, and prints one table with each figure as a
// ratio of its ceiling (spread for create-many, hot row for create-hot and
// the drain), so that the figures mean the same on any machine. Without
// pgbench it says how to install it and goes on without ratios. Every
// measured phase, pgbench's included, starts right after a CHECKPOINT, so
// that none pays for the dirty pages or the checkpoint of the one before.
//
// -rail decides the vendor the wallets of drain, disbursements and all are
// on (rail.go): sandbox (the default) is simbank inside the api and worker;
// vendorsim is simbank served over HTTP by `payoutd vendorsim`; xendit is
// vendor xendit served by `payoutd vendorsim --provider xendit`; snap is
// vendor snap:bca, a SNAP BI bank served by `payoutd vendorsim --provider
// snap --bank bca`. A simulated rail runs as a process of its own on a
// free loopback port, with SANDBOX_COMPLETE_AFTER=-sandbox-complete-after
// (so it pays at once and the drain measures the service, not a simulated
// bank's delay) and secrets made up for the run, which the api and worker
// get through their environment (XENDIT_SECRET_KEY, XENDIT_CALLBACK_TOKEN,
// XENDIT_BASE_URL; or VENDORSIM_URL, VENDORSIM_TOKEN,
// VENDORSIM_CALLBACK_SECRET; or SNAP_BANKS and the SNAP_BCA_* variables)
// and the summary never prints. The snap rail also makes the platform's
// and the bank's 2048-bit RSA key pairs, in a private temporary directory
// removed at the end of the run: the service signs with the platform's
// and verifies notifications with the bank's public key, the simulator
// the other way round. Such a rail
// reports payouts to the api, so an api runs through the drain beside the
// worker to receive its callbacks; the CPU of the simulator and of that
// api is reported as "rail". The drain counts a payout once it is final
// (SUCCESS, or failed), whether a callback or the worker's status poll
// brought the result, and reports the p50/p90/p99/max of a paid payout's
// latency from the worker's first call to the vendor (submit_attempted_at)
// to SUCCESS (completed_at).
//
// Scenario concurrent (also the last phase of disbursements and all) runs
// the api and `payoutd worker` together, as in production, with
// -concurrency clients (32 by default) and no warm-up, in three
// sub-phases of -duration or -concurrent-max creates each: hot (one
// wallet, DISBURSEMENT_SUBMIT_WAIT=0), spread (-concurrent-wallets
// wallets, wait 0) and wait (those wallets, the service's default wait).
// After the creates it waits, at most -concurrent-drain-timeout, until
// every payout of the sub-phase is terminal, and reports creates/s with
// p50/p99/max, end to end (payouts over the time from the first create to
// the last terminal; create → terminal p50/p99/max; how long after the
// last create the last payout became terminal), each rate over the same
// run's ceiling (hot row for hot, spread for the others). Then it runs the
// ledger's reconcile (as `payoutd admin reconcile`) and counts overdrawn
// wallets; payouts left open, a failed one, an overdrawn wallet or a
// reconcile problem make the run unclean (exit 1). With -evidence it
// samples pg_stat_activity (wait events) and pg_locks (blocked requests,
// and which statement waits for which) every 100 ms, reads
// pg_stat_statements when the server preloads it, times a Redis PING every
// 100 ms, and takes CPU profiles of the api (its /debug/pprof) and of the
// worker (net/http/pprof added to the tool's build only, by go build
// -overlay, listening on a loopback port given in LOADTEST_PPROF_ADDR); a
// breakdown goes into the summary, the raw files into -evidence-dir.
//
// Self-contained mode (the default) needs PostgreSQL and Redis on this
// machine. The tool drops and recreates the database named in
// -database-url (DROP DATABASE ... WITH (FORCE), through the "postgres"
// maintenance database of the same server; only a server on the loopback
// interface), migrates it, provisions the clients, each with one funded
// wallet, builds ./cmd/payoutd and runs `payoutd api` (and for the drain
// `payoutd worker`) as a separate process, the api on a free port of
// 127.0.0.1, with APP_ENV=production, LOG_LEVEL=warn (no per-request
// access logs) and the SECRETS_KEY the tool sealed the clients' secrets
// with. It waits for /readyz, runs the load, then stops each process with
// SIGTERM and waits for it; they are also stopped on Ctrl-C or any error.
//
// With -target URL the tool starts no server and recreates nothing: it
// provisions the clients into -database-url, which must be that server's
// database (migrated), sealing their secrets with -secrets-key, which must
// be that server's SECRETS_KEY, for the environment given by -env.
//
// With -inprocess-profile FILE the tool serves the requests with the API
// handler inside its own process, called directly without HTTP or TCP,
// and writes a CPU profile of the measured window to FILE: what the server
// spends per request, database client included, without the HTTP server
// and TCP. Building the requests (main.* frames) is in it too, a few per
// cent. The summary adds the heap allocations per request.
//
// With -server-profile FILE the tool starts `payoutd api` with operator
// credentials it makes up for the run (ADMIN_USER, ADMIN_PASSWORD) and
// writes the CPU profile of that process over the measured window, from
// its /debug/pprof/profile, to FILE: HTTP and TCP included.
//
// The load generator shares the machine with the server, PostgreSQL and
// Redis; the summary shows how the CPU was split between them (for the
// disbursements table also the CPU time per operation of each), and warns
// when other processes or the hypervisor (steal) took enough of it to
// distort the figures (Linux).
//
// Exit status: 0 when every request succeeded and no payout failed,
// whether or not the goals were met (they are informational); 1 when a
// request or payout failed or the run could not be made; 2 for bad flags.
//
// The source: main.go lists the scenarios, each in a file of its own,
// scenario_<name>.go (the concurrent phase's report, evidence and webhook
// sink beside it, concurrent_*.go; the creates several scenarios send in
// creates.go). The shared parts are filed by job: flags.go; setup.go and
// backends.go (the load database, Redis and the provisioned clients);
// driver.go (the closed loop) with its senders driver_http.go and
// driver_inprocess.go; single.go and suite.go (running one closed-loop
// scenario, or a suite's phases); processes.go (building and running
// payoutd); ceilings.go (pgbench); cpu.go; report.go, report_single.go and
// report_suite.go; rail.go and railkeys.go; serverprofile.go and
// groupstages.go (the profiles and group commits of a running payoutd).
package main
