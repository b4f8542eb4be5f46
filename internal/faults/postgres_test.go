package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
)

// PostgreSQL is stopped hard (pg_ctl stop -m immediate: every backend
// dies, nothing is flushed cleanly, the start that follows runs crash
// recovery) under load, stays down for about three seconds and starts
// again. Meanwhile a create is answered a clean 503 with an {"error"}
// body, never a 500: the transaction cut short rolled back, and a commit
// whose answer was lost is found again by the merchant's retry with the
// same Idempotency-Key. The API's and the worker's pools reconnect by
// themselves (the same processes run throughout), the submit pumps and
// the sweeps resume, and every committed payout is paid exactly once.
func TestPostgresRestart(t *testing.T) {
	scenario(t, quick)
	pg := startPGInstance(t, "postgres")
	dbURL := pg.createDatabase("payoutd")
	migrateDatabase(t, dbURL)
	c := newClusterOn(t, startPGScenarioRedis(t), dbURL, clusterOptions{})
	api := c.startAPI()
	worker := c.startPayoutd("worker", []string{"worker"})

	ctx, stop := context.WithTimeout(context.Background(), 13*time.Second)
	defer stop()
	d := c.drive(ctx, 8, 30*time.Second)
	time.Sleep(3 * time.Second)
	pg.stopImmediate()
	d.markFault()
	down := time.Now()
	outage := probePGOutage(t, d, 3*time.Second)
	pg.start()
	t.Logf("PostgreSQL was down %.1fs", time.Since(down).Seconds())
	d.wait()

	s := c.settle("postgres-restart", d, time.Minute)
	logAPIInternalErrors(t, api)
	outage.check(t)
	if s.committed == 0 || s.succeeded == 0 {
		t.Fatalf("nothing was paid: %s", s)
	}
	d.mu.Lock()
	resumed := !d.resumedAt.IsZero()
	d.mu.Unlock()
	if !resumed {
		t.Fatal("no create was accepted after the restart: the API's pool did not recover")
	}
	for _, p := range []*proc{api, worker} {
		if !processAlive(p) {
			t.Errorf("%s exited: its pool must ride out a database restart", p.name)
		}
	}
}

// logAPIInternalErrors logs the API's "internal error" lines (each answered
// 500) with what the database said, which the output's tail may not hold.
func logAPIInternalErrors(t *testing.T, api *proc) {
	t.Helper()
	lines := strings.Split(api.logs.String(), "\n")
	for _, line := range lines {
		if strings.Contains(line, `"msg":"internal error"`) {
			t.Logf("%s answered 500: %s", api.name, line)
		}
	}
}

// pgOutageProbes is what creates and /readyz answered while the database
// was down.
type pgOutageProbes struct {
	creates   map[int]int // by status
	badBodies int
	readyz    map[int]int
	errs      int // transport errors: the API itself must keep answering
}

// probePGOutage sends a create (with a key of its own, which the merchant
// then gives up) and a /readyz to the first API every 200 ms for the
// length of the outage, and records what they were answered.
func probePGOutage(t *testing.T, d *driver, length time.Duration) *pgOutageProbes {
	t.Helper()
	o := &pgOutageProbes{creates: map[int]int{}, readyz: map[int]int{}}
	api := d.c.apiFor(0)
	for n, end := 0, time.Now().Add(length); time.Now().Before(end); n++ {
		key := fmt.Sprintf("outage-probe-%d", n)
		body, _ := json.Marshal(map[string]string{"client_wallet_id": d.c.wallet.String(), "amount": fmt.Sprint(payoutAmount),
			"bank_code": "bca", "account_no": "1234567890", "transfer_type": "BIFAST", "reference_id": key})
		code, errBody, err := d.post(api, body, key)
		d.record(key, unanswered, time.Time{})
		switch {
		case err != nil:
			o.errs++
		default:
			o.creates[code]++
			if !errBody {
				o.badBodies++
			}
		}
		if resp, err := http.Get("http://" + api + "/readyz"); err == nil {
			resp.Body.Close()
			o.readyz[resp.StatusCode]++
		} else {
			o.errs++
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("during the outage: creates answered %v, /readyz %v, transport errors %d", o.creates, o.readyz, o.errs)
	return o
}

// check fails the test unless every create sent during the outage was a
// 503 with an {"error"} body and /readyz said 503 too.
func (o *pgOutageProbes) check(t *testing.T) {
	t.Helper()
	if o.creates[http.StatusServiceUnavailable] == 0 {
		t.Errorf("no create was answered 503 while the database was down: %v", o.creates)
	}
	for code, n := range o.creates {
		if code != http.StatusServiceUnavailable {
			t.Errorf("%d creates were answered %d while the database was down; want 503", n, code)
		}
	}
	if o.badBodies > 0 {
		t.Errorf("%d answers during the outage had no {\"error\": \"...\"} body", o.badBodies)
	}
	if o.readyz[http.StatusServiceUnavailable] == 0 {
		t.Errorf("/readyz never said 503 while the database was down: %v", o.readyz)
	}
	if o.errs > 0 {
		t.Errorf("the API did not answer %d requests while the database was down", o.errs)
	}
}

// processAlive reports whether p's process is still alive (not exited, not a
// zombie waiting to be reaped).
func processAlive(p *proc) bool {
	if p.cmd == nil || p.cmd.Process == nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err != nil {
		return false
	}
	// pid (comm) state ...: comm may hold spaces, the state follows its ')'.
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] != 'Z'
}

// pgInstance is a PostgreSQL cluster of the test's own: a data directory
// under the test's temporary directory, a loopback port and a socket
// directory of its own, trust authentication for 127.0.0.1, fsync on. As
// root its commands run as the postgres user (PostgreSQL refuses root).
type pgInstance struct {
	t       *testing.T
	name    string
	bin     string // the directory of initdb, pg_ctl, pg_basebackup
	base    string // holds data, the socket directory and the log
	data    string
	port    int
	asOwner bool // run the commands through runuser -u postgres
}

// pgBinDir finds the directory of initdb and pg_ctl, which Debian keeps
// off PATH: pg_config --bindir, else the newest /usr/lib/postgresql/*/bin.
func pgBinDir(t *testing.T) string {
	t.Helper()
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		dir := strings.TrimSpace(string(out))
		if _, err := os.Stat(filepath.Join(dir, "initdb")); err == nil {
			return dir
		}
	}
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	sort.Slice(found, func(i, j int) bool { return pgMajor(found[i]) < pgMajor(found[j]) })
	if len(found) == 0 {
		t.Fatal("initdb not found (pg_config --bindir, /usr/lib/postgresql/*/bin): apt-get install postgresql; make faults installs it")
	}
	return filepath.Dir(found[len(found)-1])
}

func pgMajor(initdb string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(initdb))))
	return n
}

// newPGInstance prepares an instance's directories (not its data).
func newPGInstance(t *testing.T, name string) *pgInstance {
	t.Helper()
	pg := &pgInstance{t: t, name: name, bin: pgBinDir(t), base: t.TempDir(), asOwner: os.Geteuid() == 0}
	pg.data = filepath.Join(pg.base, "data")
	_, port, _ := net.SplitHostPort(freeAddr(t))
	pg.port, _ = strconv.Atoi(port)
	if err := os.Mkdir(filepath.Join(pg.base, "socket"), 0o700); err != nil {
		t.Fatal(err)
	}
	if pg.asOwner {
		owner, err := user.Lookup("postgres")
		if err != nil {
			t.Fatal("running as root, PostgreSQL must run as the postgres user, and there is none: apt-get install postgresql")
		}
		uid, _ := strconv.Atoi(owner.Uid)
		gid, _ := strconv.Atoi(owner.Gid)
		// The test's temporary directories are private (0700): postgres
		// must be able to pass through them to its own.
		for dir := filepath.Dir(pg.base); strings.HasPrefix(dir, os.TempDir()+"/"); dir = filepath.Dir(dir) {
			if err := os.Chmod(dir, 0o711); err != nil {
				t.Fatal(err)
			}
		}
		for _, dir := range []string{pg.base, filepath.Join(pg.base, "socket")} {
			if err := os.Chown(dir, uid, gid); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Cleanup(pg.cleanup)
	return pg
}

// startPGInstance initialises a cluster and starts it.
func startPGInstance(t *testing.T, name string) *pgInstance {
	t.Helper()
	pg := newPGInstance(t, name)
	pg.run("initdb", "-D", pg.data, "-U", "postgres", "--auth=trust", "--encoding=UTF8", "--locale=C", "--no-sync")
	pg.configure(
		"listen_addresses = '127.0.0.1'",
		"fsync = on",
		"synchronous_commit = on",
		"shared_buffers = 32MB",
		"max_connections = 150",
		"wal_level = replica",
		"max_wal_senders = 4",
		"logging_collector = off",
	)
	pg.start()
	return pg
}

// configure appends settings to the instance's postgresql.conf (a later
// line wins over an earlier one), with its own port and socket directory.
func (pg *pgInstance) configure(settings ...string) {
	pg.t.Helper()
	settings = append(settings, fmt.Sprintf("port = %d", pg.port),
		fmt.Sprintf("unix_socket_directories = '%s'", filepath.Join(pg.base, "socket")))
	f, err := os.OpenFile(filepath.Join(pg.data, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		pg.t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString("\n# the fault scenario's\n" + strings.Join(settings, "\n") + "\n"); err != nil {
		pg.t.Fatal(err)
	}
}

// command is one of PostgreSQL's programs, as the postgres user when the
// test runs as root.
func (pg *pgInstance) command(program string, args ...string) *exec.Cmd {
	path := filepath.Join(pg.bin, program)
	if pg.asOwner {
		return exec.Command("runuser", append([]string{"-u", "postgres", "--", path}, args...)...)
	}
	return exec.Command(path, args...)
}

// run runs a program and fails the test if it fails; 60 s at most.
func (pg *pgInstance) run(program string, args ...string) {
	pg.t.Helper()
	if out, err := pg.tryRun(program, args...); err != nil {
		pg.t.Fatalf("%s %s: %s %v\n%s\nserver log:\n%s", pg.name, program, strings.Join(args, " "), err, out, pg.logTail())
	}
}

func (pg *pgInstance) tryRun(program string, args ...string) ([]byte, error) {
	cmd := pg.command(program, args...)
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			cmd.Process.Kill()
		}
	}()
	return cmd.CombinedOutput()
}

func (pg *pgInstance) logFile() string { return filepath.Join(pg.base, "server.log") }

func (pg *pgInstance) logTail() string {
	b, _ := os.ReadFile(pg.logFile())
	if len(b) > 4096 {
		b = b[len(b)-4096:]
	}
	return string(b)
}

// start starts the server and waits until it accepts connections.
func (pg *pgInstance) start() {
	pg.t.Helper()
	pg.run("pg_ctl", "-D", pg.data, "-l", pg.logFile(), "-w", "-t", "30", "start")
}

// stopImmediate stops the server as a crash would: every process quits at
// once, and the next start runs crash recovery.
func (pg *pgInstance) stopImmediate() {
	pg.t.Helper()
	pg.run("pg_ctl", "-D", pg.data, "-m", "immediate", "-w", "stop")
}

// postmasterPID is the server's process, from postmaster.pid (0 if none).
func (pg *pgInstance) postmasterPID() int {
	b, err := os.ReadFile(filepath.Join(pg.data, "postmaster.pid"))
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
	return pid
}

// crash kills the server's postmaster and every process of the server
// with SIGKILL, as the crash of its machine would: no orphaned backend
// goes on answering the connections it had.
func (pg *pgInstance) crash() {
	pg.t.Helper()
	if pg.postmasterPID() == 0 {
		pg.t.Fatalf("%s: no postmaster.pid", pg.name)
	}
	pg.signalAll(syscall.SIGKILL)
}

// signalAll sends sig to the postmaster and each of its children (each
// child of the postmaster leads a process group of its own, so no group
// signal reaches them all); it does nothing if the server is not running.
func (pg *pgInstance) signalAll(sig syscall.Signal) {
	pid := pg.postmasterPID()
	if pid == 0 {
		return
	}
	pids := []int{pid}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces.
		s := string(stat)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) > 1 && fields[1] == strconv.Itoa(pid) {
			pids = append(pids, child)
		}
	}
	for _, p := range pids {
		syscall.Kill(p, sig)
	}
}

// cleanup stops the server however it is: stopped, running, frozen or
// killed.
func (pg *pgInstance) cleanup() {
	if pg.t.Failed() {
		pg.t.Logf("%s server log (last 4 kB):\n%s", pg.name, pg.logTail())
	}
	if _, err := os.Stat(filepath.Join(pg.data, "postmaster.pid")); err != nil {
		return
	}
	pg.signalAll(syscall.SIGCONT) // a frozen server would not hear pg_ctl
	if _, err := pg.tryRun("pg_ctl", "-D", pg.data, "-m", "immediate", "-w", "-t", "20", "stop"); err != nil {
		if pid := pg.postmasterPID(); pid > 0 {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// url is a postgres:// URL of database db on the instance.
func (pg *pgInstance) url(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", pg.port, db)
}

// exec runs SQL statements on the instance's postgres database.
func (pg *pgInstance) exec(statements ...string) {
	pg.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, pg.url("postgres"))
	if err != nil {
		pg.t.Fatalf("%s: %v", pg.name, err)
	}
	defer conn.Close(ctx)
	for _, s := range statements {
		if _, err := conn.Exec(ctx, s); err != nil {
			pg.t.Fatalf("%s: %s: %v", pg.name, s, err)
		}
	}
}

// createDatabase creates an empty database and returns its URL.
func (pg *pgInstance) createDatabase(name string) string {
	pg.t.Helper()
	pg.exec("CREATE DATABASE " + name)
	return pg.url(name)
}

// migrateDatabase applies the schema as an operator does: payoutd migrate.
func migrateDatabase(t *testing.T, dbURL string) {
	t.Helper()
	cmd := exec.Command(payoutdBin, "migrate")
	cmd.Env = append(os.Environ(), "DATABASE_URL="+dbURL, "LOG_LEVEL=warn")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("payoutd migrate: %v\n%s", err, out)
	}
}

// startPGScenarioRedis starts a Redis of the scenario's own on a loopback
// port (no persistence) and returns its URL: the PostgreSQL scenarios
// share nothing with the machine's servers.
func startPGScenarioRedis(t *testing.T) string {
	t.Helper()
	server, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatal("redis-server is not installed (apt-get install redis-server; make faults installs it)")
	}
	addr := freeAddr(t)
	_, port, _ := net.SplitHostPort(addr)
	startProc(t, "redis", server, []string{"--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", t.TempDir()}, nil)
	waitFor(t, "redis on "+addr, 10*time.Second, func() bool {
		c := redis.NewClient(&redis.Options{Addr: addr})
		defer c.Close()
		return c.Ping(context.Background()).Err() == nil
	})
	return "redis://" + addr + "/0"
}
