package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/payoutd/payoutd/internal/testenv"
)

// The leader of a two-member PostgreSQL cluster under Patroni (Debian's
// patroni, with a single-member etcd as its store) dies under load: its
// PostgreSQL and its Patroni are killed with SIGKILL together, as a crash
// of its machine would. Nobody promotes anything by hand: once the
// leader's key expires in etcd (ttl 10 s here), Patroni promotes the
// replica. The service reaches the cluster through one multi-host
// DATABASE_URL with target_session_attrs=read-write: meanwhile a create is
// answered 503, and then the API's and the worker's pools connect to the
// new leader by themselves, with no configuration change and no restart.
//
// Patroni runs in synchronous_mode: the replica is the synchronous standby
// (a commit is acknowledged once it has it on disk) and only that standby
// may be promoted. To make that count, the replica streams from the leader
// through a link of the test's own (the leader's connect_address), which
// stalls for the last two seconds before the crash and whose backlog dies
// with the leader: the leader acknowledges nothing meanwhile, and no payout
// a merchant was answered 2xx for is missing on the new leader. Every one
// is paid exactly once.
//
// synchronous_mode_strict stays off: with two members, strict mode would
// refuse every commit from the moment either member is lost, so a failover
// would end in an outage until the dead machine came back. Without it the
// promoted member commits alone until a replica joins again (it never
// promotes a member that may lack acknowledged commits; that is
// synchronous_mode's promise, strict or not).
//
// PAYOUTD_FAULTS_PATRONI_ASYNC=1 runs the same with synchronous_mode off:
// the leader goes on acknowledging while the replica's link is stalled.
func TestPatroniFailover(t *testing.T) {
	scenario(t, slow)
	synchronous := os.Getenv("PAYOUTD_FAULTS_PATRONI_ASYNC") == ""
	pc := startPatroniCluster(t, synchronous)
	c := newClusterOn(t, startPGScenarioRedis(t), pc.dbURL, clusterOptions{})
	api := c.startAPI()
	worker := c.startPayoutd("worker", []string{"worker"})

	ctx, stop := context.WithTimeout(context.Background(), 90*time.Second)
	defer stop()
	d := c.drive(ctx, 8, 30*time.Second)
	time.Sleep(4 * time.Second)
	acked := ackedWhileStalled(d, pc.link)
	pc.leader.crash()
	pc.link.cut()
	d.markFault()
	killed := time.Now()
	outage := probePGOutage(t, d, 3*time.Second)
	waitFor(t, "Patroni promoting "+pc.replica.name, 90*time.Second, pc.replica.isPrimary)
	promoted := time.Since(killed)
	waitFor(t, "a create accepted after the kill", 60*time.Second, func() bool {
		d.mu.Lock()
		defer d.mu.Unlock()
		return !d.resumedAt.IsZero()
	})
	time.Sleep(5 * time.Second) // creates on the new leader
	stop()
	d.wait()

	s := c.settle("patroni-failover", d, 2*time.Minute)
	fmt.Printf("patroni-failover: %s promoted %.1fs after the leader was killed; first create accepted %.1fs after the kill\n",
		pc.replica.name, promoted.Seconds(), s.recovery.Seconds())
	logAPIInternalErrors(t, api)
	outage.check(t)
	if acked > 0 {
		t.Errorf("%d creates were acknowledged while the synchronous standby's link was stalled", acked)
	}
	if s.committed == 0 || s.succeeded == 0 {
		t.Fatalf("nothing was paid: %s", s)
	}
	for _, p := range []*proc{api, worker} {
		if !processAlive(p) {
			t.Errorf("%s exited: its pool must follow a failover by itself", p.name)
		}
	}
}

// patroniCluster is a leader and its replica under Patroni, their etcd,
// the link the replica streams through, and the service's URL of them.
type patroniCluster struct {
	leader, replica *patroniMember
	link            *tcpLink
	dbURL           string
}

// startPatroniCluster starts etcd, then the first member (which
// bootstraps the cluster and leads it, with the migrated payoutd database),
// then the second, which clones the first through link and streams from
// it; with synchronous, it waits until Patroni made it the synchronous
// standby.
func startPatroniCluster(t *testing.T, synchronous bool) *patroniCluster {
	t.Helper()
	etcd := startEtcd(t)
	first := newPatroniMember(t, "pg1")
	link := startTCPLink(t, fmt.Sprintf("127.0.0.1:%d", first.pg.port))
	first.start(etcd, link.addr(), synchronous)
	waitFor(t, "pg1 leading the cluster", 90*time.Second, first.isPrimary)
	first.pg.createDatabase("payoutd")
	migrateDatabase(t, first.pg.url("payoutd"))

	second := newPatroniMember(t, "pg2")
	second.start(etcd, fmt.Sprintf("127.0.0.1:%d", second.pg.port), synchronous)
	want := "async"
	if synchronous {
		want = "sync"
	}
	waitFor(t, "pg2 streaming from pg1 ("+want+")", 90*time.Second, func() bool {
		return first.pg.query("SELECT coalesce(max(sync_state), '') FROM pg_stat_replication") == want
	})
	return &patroniCluster{leader: first, replica: second, link: link,
		dbURL: fmt.Sprintf("postgres://postgres@127.0.0.1:%d,127.0.0.1:%d/payoutd?sslmode=disable&target_session_attrs=read-write",
			first.pg.port, second.pg.port)}
}

// startEtcd starts a single-member etcd (Debian's etcd-server) on loopback
// ports of its own, data in the test's temporary directory, and returns
// its client address.
func startEtcd(t *testing.T) string {
	t.Helper()
	server, err := exec.LookPath("etcd")
	if err != nil {
		t.Fatal("etcd is not installed (apt-get install etcd-server; make faults installs it)")
	}
	client, peer := freeAddr(t), freeAddr(t)
	startProc(t, "etcd", server, []string{"--name", "faults", "--data-dir", filepath.Join(t.TempDir(), "etcd"),
		"--listen-client-urls", "http://" + client, "--advertise-client-urls", "http://" + client,
		"--listen-peer-urls", "http://" + peer, "--initial-advertise-peer-urls", "http://" + peer,
		"--initial-cluster", "faults=http://" + peer, "--logger", "zap", "--log-level", "warn"}, nil)
	waitFor(t, "etcd on "+client, 30*time.Second, func() bool {
		resp, err := http.Get("http://" + client + "/health")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var h struct{ Health string }
		return json.NewDecoder(resp.Body).Decode(&h) == nil && h.Health == "true"
	})
	return client
}

// patroniMember is one member of the cluster: a Patroni process and the
// PostgreSQL it runs, whose directories, port and log are pg's (Patroni
// initialises or clones the data directory itself).
type patroniMember struct {
	t        *testing.T
	name     string
	pg       *pgInstance
	restAddr string
	cmd      *exec.Cmd
	logs     *testenv.SyncBuffer
}

func newPatroniMember(t *testing.T, name string) *patroniMember {
	t.Helper()
	if _, err := exec.LookPath("patroni"); err != nil {
		t.Fatal("patroni is not installed (apt-get install patroni; make faults installs it)")
	}
	return &patroniMember{t: t, name: name, pg: newPGInstance(t, name), restAddr: freeAddr(t), logs: &testenv.SyncBuffer{}}
}

// start writes the member's configuration and starts its Patroni, as the
// postgres user when the test runs as root. connectAddr is where the
// other members reach its PostgreSQL (to clone it and stream from it).
func (m *patroniMember) start(etcd, connectAddr string, synchronous bool) {
	m.t.Helper()
	hba := []string{"local all all trust", "local replication all trust",
		"host all all 127.0.0.1/32 trust", "host replication all 127.0.0.1/32 trust"}
	config := map[string]any{
		"scope":     "payoutd-faults",
		"namespace": "/payoutd-faults/",
		"name":      m.name,
		"log":       map[string]any{"level": "INFO"},
		"restapi":   map[string]any{"listen": m.restAddr, "connect_address": m.restAddr},
		"etcd3":     map[string]any{"hosts": []string{etcd}},
		"bootstrap": map[string]any{
			// What a leader's crash costs in time: the leader's key lives
			// ttl seconds after its last refresh; Patroni checks every
			// loop_wait and gives up on etcd after retry_timeout
			// (loop_wait + 2 × retry_timeout must stay within ttl).
			"dcs": map[string]any{
				"ttl": 10, "loop_wait": 1, "retry_timeout": 4,
				"maximum_lag_on_failover": 1 << 20,
				"synchronous_mode":        synchronous,
				"synchronous_mode_strict": false,
				"postgresql": map[string]any{
					"use_pg_rewind": false,
					"use_slots":     true,
					"parameters": map[string]any{
						"wal_level": "replica", "hot_standby": "on", "max_wal_senders": 5, "max_replication_slots": 5,
						"fsync": "on", "synchronous_commit": "on", "max_connections": 150, "shared_buffers": "32MB",
					},
				},
			},
			"initdb": []any{map[string]string{"encoding": "UTF8"}, map[string]string{"locale": "C"}},
		},
		"postgresql": map[string]any{
			"listen":          fmt.Sprintf("127.0.0.1:%d", m.pg.port),
			"connect_address": connectAddr,
			"data_dir":        m.pg.data,
			"bin_dir":         m.pg.bin,
			"pgpass":          filepath.Join(m.pg.base, "pgpass"),
			"authentication": map[string]any{
				"superuser":   map[string]string{"username": "postgres"},
				"replication": map[string]string{"username": "postgres"},
			},
			"pg_hba": hba,
			// A clone starts from a checkpoint: a spread one took 100 s.
			"basebackup": []any{map[string]string{"checkpoint": "fast"}},
			"parameters": map[string]any{
				"unix_socket_directories": filepath.Join(m.pg.base, "socket"),
				// The server's log where pgInstance shows it on failure.
				"logging_collector": "on", "log_directory": m.pg.base, "log_filename": filepath.Base(m.pg.logFile()),
			},
		},
	}
	raw, err := json.MarshalIndent(config, "", "  ") // YAML reads JSON
	if err != nil {
		m.t.Fatal(err)
	}
	path := filepath.Join(m.pg.base, "patroni.yml")
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		m.t.Fatal(err)
	}
	m.cmd = exec.Command("patroni", path)
	m.cmd.Env = append(os.Environ(), "HOME="+m.pg.base)
	m.cmd.Stdout, m.cmd.Stderr = m.logs, m.logs
	// Its children (pg_basebackup, the postmaster) inherit its output:
	// once it is dead, Wait must not wait for them to close it.
	m.cmd.WaitDelay = time.Second
	// A group of its own, so that kill takes its helpers (a clone under
	// way) with it; the postmaster leads a group of its own.
	m.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if m.pg.asOwner {
		m.cmd.SysProcAttr.Credential = postgresCredential(m.t)
	}
	if err := m.cmd.Start(); err != nil {
		m.t.Fatalf("start patroni %s: %v", m.name, err)
	}
	// Registered after the instance's own cleanup, so it runs first: the
	// Patroni goes before its server is stopped, and restarts nothing.
	m.t.Cleanup(func() {
		m.kill()
		if m.t.Failed() {
			m.t.Logf("patroni %s output (last 4 kB):\n%s", m.name, tail(m.logs, 4096))
		}
	})
}

// kill ends the member's Patroni and its helpers with SIGKILL and reaps
// it.
func (m *patroniMember) kill() {
	if m.cmd == nil || m.cmd.Process == nil {
		return
	}
	syscall.Kill(-m.cmd.Process.Pid, syscall.SIGKILL)
	m.cmd.Wait()
	m.cmd = nil
}

// crash kills the member's Patroni and every process of its PostgreSQL
// with SIGKILL at once, as the crash of its machine would.
func (m *patroniMember) crash() {
	m.t.Helper()
	syscall.Kill(-m.cmd.Process.Pid, syscall.SIGKILL)
	m.pg.crash()
	m.kill()
}

// isPrimary asks the member's Patroni whether it runs the leader (its
// REST API answers GET /primary with 200 only then).
func (m *patroniMember) isPrimary() bool {
	resp, err := http.Get("http://" + m.restAddr + "/primary")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// postgresCredential is the postgres user's, for the servers that refuse
// to run as root (PostgreSQL, and Patroni and PgBouncer with it).
func postgresCredential(t *testing.T) *syscall.Credential {
	t.Helper()
	owner, err := user.Lookup("postgres")
	if err != nil {
		t.Fatal("running as root, PostgreSQL must run as the postgres user, and there is none: apt-get install postgresql")
	}
	uid, _ := strconv.Atoi(owner.Uid)
	gid, _ := strconv.Atoi(owner.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
}
