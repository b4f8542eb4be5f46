package faults

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/payoutd/payoutd/internal/testenv"
)

// pgBouncer is a PgBouncer of the test's own (Debian's pgbouncer) on a
// loopback port, in transaction pooling before one database: each client
// connection holds a server connection only for the length of a
// transaction, and at most poolSize server connections are opened.
type pgBouncer struct {
	t        *testing.T
	addr     string
	database string
	poolSize int
	cmd      *exec.Cmd
	logs     *testenv.SyncBuffer

	stopWatching context.CancelFunc
	watched      chan struct{}
	mu           sync.Mutex
	maxClients   int // the most client connections seen at once
	maxServers   int // the most server connections seen at once
}

// startPgBouncer starts a PgBouncer before the database of dbURL (a
// PostgreSQL that trusts 127.0.0.1, as the test servers do), as the
// postgres user when the test runs as root (PgBouncer refuses root).
func startPgBouncer(t *testing.T, dbURL string, poolSize int) *pgBouncer {
	t.Helper()
	server, err := exec.LookPath("pgbouncer")
	if err != nil {
		// Debian keeps it in /usr/sbin, off a user's PATH.
		if _, statErr := os.Stat("/usr/sbin/pgbouncer"); statErr != nil {
			t.Fatal("pgbouncer is not installed (apt-get install pgbouncer; .ci/run and make faults install it)")
		}
		server = "/usr/sbin/pgbouncer"
	}
	target, err := pgx.ParseConfig(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	b := &pgBouncer{t: t, addr: freeAddr(t), database: target.Database, poolSize: poolSize, logs: &testenv.SyncBuffer{}}
	_, port, _ := strings.Cut(b.addr, ":")
	dir := t.TempDir()
	var credential *syscall.Credential
	if os.Geteuid() == 0 {
		credential = postgresCredential(t)
		// The test's temporary directories are private (0700): postgres
		// must be able to pass through them to read its configuration.
		for d := dir; strings.HasPrefix(d, os.TempDir()+"/"); d = filepath.Dir(d) {
			if err := os.Chmod(d, 0o711); err != nil {
				t.Fatal(err)
			}
		}
	}
	users := filepath.Join(dir, "userlist.txt")
	ini := filepath.Join(dir, "pgbouncer.ini")
	write := func(path, text string) {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(users, fmt.Sprintf("%q \"\"\n", target.User))
	write(ini, fmt.Sprintf(`[databases]
%[1]s = host=%[2]s port=%[3]d dbname=%[1]s user=%[4]s

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %[5]s
unix_socket_dir =
auth_type = trust
auth_file = %[6]s
pool_mode = transaction
default_pool_size = %[7]d
max_db_connections = %[7]d
reserve_pool_size = 0
max_client_conn = 500
admin_users = %[4]s
pidfile =
logfile =
log_connections = 0
log_disconnections = 0
`, target.Database, target.Host, target.Port, target.User, port, users, poolSize))

	b.cmd = exec.Command(server, ini)
	b.cmd.Stdout, b.cmd.Stderr = b.logs, b.logs
	b.cmd.WaitDelay = time.Second
	if credential != nil {
		b.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: credential}
	}
	if err := b.cmd.Start(); err != nil {
		t.Fatalf("start pgbouncer: %v", err)
	}
	t.Cleanup(func() {
		b.cmd.Process.Kill()
		b.cmd.Wait()
		if t.Failed() {
			t.Logf("pgbouncer output (last 4 kB):\n%s", tail(b.logs, 4096))
		}
	})
	waitFor(t, "pgbouncer on "+b.addr, 30*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, b.url("simple_protocol"))
		if err != nil {
			return false
		}
		defer conn.Close(ctx)
		return conn.Ping(ctx) == nil
	})
	return b
}

// url is the URL a payoutd process is given to reach the database through
// the bouncer, with pgx's default_query_exec_mode set to mode ("" leaves
// pgx's default, which prepares and keeps named statements).
func (b *pgBouncer) url(mode string) string {
	q := url.Values{"sslmode": {"disable"}}
	if mode != "" {
		q.Set("default_query_exec_mode", mode)
	}
	return fmt.Sprintf("postgres://postgres@%s/%s?%s", b.addr, b.database, q.Encode())
}

// watch samples the bouncer's pools (its admin console's SHOW POOLS)
// every 100 ms until checkPooled, keeping the most client and server
// connections of the database seen at once.
func (b *pgBouncer) watch() {
	b.t.Helper()
	admin := strings.Replace(b.url("simple_protocol"), "/"+b.database+"?", "/pgbouncer?", 1)
	conn, err := pgx.Connect(context.Background(), admin)
	if err != nil {
		b.t.Fatalf("pgbouncer's admin console: %v", err)
	}
	var ctx context.Context
	ctx, b.stopWatching = context.WithCancel(context.Background())
	b.watched = make(chan struct{})
	b.t.Cleanup(b.stopWatching)
	go func() {
		defer close(b.watched)
		defer conn.Close(context.Background())
		b.sample(ctx, conn)
	}()
}

// sample records the pools' counts until ctx ends.
func (b *pgBouncer) sample(ctx context.Context, conn *pgx.Conn) {
	for ctx.Err() == nil {
		clients, servers, err := b.pools(ctx, conn)
		if err != nil {
			if ctx.Err() == nil {
				b.t.Errorf("SHOW POOLS: %v", err)
			}
			return
		}
		b.mu.Lock()
		b.maxClients = max(b.maxClients, clients)
		b.maxServers = max(b.maxServers, servers)
		b.mu.Unlock()
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// pools counts the database's client and server connections in SHOW
// POOLS, whose columns differ between versions: every cl_* column but the
// cancel requests' is a client, every sv_* one a server.
func (b *pgBouncer) pools(ctx context.Context, conn *pgx.Conn) (clients, servers int, err error) {
	rows, err := conn.Query(ctx, "SHOW POOLS")
	if err != nil {
		return 0, 0, err
	}
	defer rows.Close()
	for rows.Next() {
		values, err := rows.Values()
		if err != nil {
			return 0, 0, err
		}
		fields := rows.FieldDescriptions()
		if fmt.Sprint(values[0]) != b.database {
			continue
		}
		for i, f := range fields {
			n, _ := strconv.Atoi(fmt.Sprint(values[i]))
			switch {
			case strings.Contains(f.Name, "cancel"):
			case strings.HasPrefix(f.Name, "cl_"):
				clients += n
			case strings.HasPrefix(f.Name, "sv_"):
				servers += n
			}
		}
	}
	return clients, servers, rows.Err()
}

// checkPooled stops watch and fails the test unless the processes held
// more connections to the bouncer than it ever opened to PostgreSQL, and
// it opened no more than its pool: the database saw a bounded number of
// connections however many the processes keep.
func (b *pgBouncer) checkPooled() {
	b.t.Helper()
	b.stopWatching()
	<-b.watched
	b.mu.Lock()
	defer b.mu.Unlock()
	b.t.Logf("pgbouncer: at most %d client connections at once over at most %d server connections (pool %d)",
		b.maxClients, b.maxServers, b.poolSize)
	if b.maxServers == 0 || b.maxServers > b.poolSize {
		b.t.Errorf("pgbouncer held up to %d server connections; want 1 to its pool of %d", b.maxServers, b.poolSize)
	}
	if b.maxClients <= b.maxServers {
		b.t.Errorf("the processes held at most %d connections to pgbouncer, no more than its %d to PostgreSQL: nothing was pooled",
			b.maxClients, b.maxServers)
	}
}

// useDatabaseURL gives the processes the cluster starts from now on (and
// the admin commands it runs) dbURL instead of the database's own URL; the
// test's handle on the database stays as it is.
func (c *cluster) useDatabaseURL(dbURL string) {
	for i, kv := range c.env {
		if strings.HasPrefix(kv, "DATABASE_URL=") {
			c.env[i] = "DATABASE_URL=" + dbURL
		}
	}
}
