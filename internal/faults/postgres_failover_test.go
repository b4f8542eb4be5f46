package faults

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/payoutd/payoutd/models"
)

// With asynchronous replication (the PostgreSQL default) a crash of the
// primary loses payouts the merchants were answered 2xx for: while the
// replica lags (its link stalled here) the primary goes on acknowledging
// commits the replica does not have, and the replica promoted in its place
// (by hand here, with pg_ctl promote, as a failover manager would that
// does not insist on a synchronous standby) has
// never heard of them. This is why a payments database must replicate
// synchronously, as TestPatroniFailover's cluster does; the test shows the
// loss happens, it is not a scenario of make faults' summary.
func TestPostgresAsyncFailoverLosesPayouts(t *testing.T) {
	scenario(t, slow)
	primary, replica, link, dbURL := startPGPair(t)
	c := newClusterOn(t, startPGScenarioRedis(t), dbURL, clusterOptions{})
	c.startAPI()

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	d := c.drive(ctx, 4, time.Second)
	time.Sleep(time.Second)
	acked := ackedWhileStalled(d, link)
	primary.crash()
	link.cut()
	stop()
	replica.promote()
	d.wait()

	var stored []string
	if err := c.db.Model(&models.Disbursement{}).Pluck("idempotency_key", &stored).Error; err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, k := range stored {
		have[k] = true
	}
	d.mu.Lock()
	lost := 0
	for key, a := range d.answers {
		if a == accepted && !have[key] {
			lost++
		}
	}
	d.mu.Unlock()
	t.Logf("asynchronous replication: %d creates were answered 2xx while the replica's link was stalled; after the failover %d payouts answered 2xx are not in the database",
		acked, lost)
	if lost == 0 {
		t.Fatal("no acknowledged payout was lost: the demonstration did not take place (did the link stall?)")
	}
}

// startPGPair starts a primary holding the migrated payoutd database and
// an asynchronous replica of it, streaming through a link the test can
// stall and cut; it returns them with the pair's multi-host URL.
func startPGPair(t *testing.T) (primary, replica *pgInstance, link *tcpLink, dbURL string) {
	t.Helper()
	primary = startPGInstance(t, "primary")
	primary.createDatabase("payoutd")
	migrateDatabase(t, primary.url("payoutd"))
	link = startTCPLink(t, fmt.Sprintf("127.0.0.1:%d", primary.port))
	replica = primary.startReplica("replica", link.addr())
	waitFor(t, "the replica streaming", 30*time.Second, func() bool {
		return primary.query("SELECT coalesce(max(sync_state), '') FROM pg_stat_replication") == "async"
	})
	dbURL = fmt.Sprintf("postgres://postgres@127.0.0.1:%d,127.0.0.1:%d/payoutd?sslmode=disable&target_session_attrs=read-write",
		primary.port, replica.port)
	return primary, replica, link, dbURL
}

// ackedWhileStalled stalls the replication link for two seconds and
// returns how many creates were answered 2xx in the last 1.5 s of it (the
// first half second lets the answers already on their way arrive). It
// leaves the link stalled.
func ackedWhileStalled(d *driver, link *tcpLink) int {
	link.stall()
	time.Sleep(500 * time.Millisecond)
	before := d.acceptedCount()
	time.Sleep(1500 * time.Millisecond)
	return d.acceptedCount() - before
}

// acceptedCount is how many creates were answered 2xx so far.
func (d *driver) acceptedCount() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for _, a := range d.answers {
		if a == accepted {
			n++
		}
	}
	return n
}

// startReplica clones the instance with pg_basebackup -R (a standby
// streaming from it) through primaryAddr into an instance of its own and
// starts it.
func (pg *pgInstance) startReplica(name, primaryAddr string) *pgInstance {
	pg.t.Helper()
	host, port, _ := net.SplitHostPort(primaryAddr)
	r := newPGInstance(pg.t, name)
	r.run("pg_basebackup", "-D", r.data, "-h", host, "-p", port, "-U", "postgres",
		"-R", "-X", "stream", "-c", "fast", "--no-sync")
	r.configure() // its own port and socket directory
	r.start()
	return r
}

// promote makes a standby the primary and waits until it takes writes.
func (pg *pgInstance) promote() {
	pg.t.Helper()
	pg.run("pg_ctl", "-D", pg.data, "-w", "-t", "30", "promote")
	waitFor(pg.t, pg.name+" out of recovery", 30*time.Second, func() bool {
		return pg.query("SELECT pg_is_in_recovery()::text") == "false"
	})
}

// query returns the single value a query on the postgres database
// answers, or "" if it fails.
func (pg *pgInstance) query(sql string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, pg.url("postgres"))
	if err != nil {
		return ""
	}
	defer conn.Close(ctx)
	var v string
	if err := conn.QueryRow(ctx, sql).Scan(&v); err != nil {
		return ""
	}
	return v
}

// tcpLink is a TCP relay on loopback, between a standby and its primary:
// stalled, it holds what either side sends; cut, it drops the connections
// with what it held and refuses new ones, as a network would when the
// primary's machine dies.
type tcpLink struct {
	t      *testing.T
	ln     net.Listener
	target string

	mu      sync.Mutex
	changed *sync.Cond
	stalled bool
	isCut   bool
	conns   []net.Conn
}

func startTCPLink(t *testing.T, target string) *tcpLink {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &tcpLink{t: t, ln: ln, target: target}
	l.changed = sync.NewCond(&l.mu)
	t.Cleanup(l.cut)
	go func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.DialTimeout("tcp", target, 5*time.Second)
			if err != nil {
				in.Close()
				continue
			}
			l.mu.Lock()
			if l.isCut {
				l.mu.Unlock()
				in.Close()
				out.Close()
				return
			}
			l.conns = append(l.conns, in, out)
			l.mu.Unlock()
			go l.relay(out, in)
			go l.relay(in, out)
		}
	}()
	return l
}

func (l *tcpLink) addr() string { return l.ln.Addr().String() }

// relay copies src to dst, holding each read while the link is stalled.
func (l *tcpLink) relay(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			l.mu.Lock()
			for l.stalled && !l.isCut {
				l.changed.Wait()
			}
			cut := l.isCut
			l.mu.Unlock()
			if cut {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				err = werr
			}
		}
		if err != nil {
			src.Close()
			dst.Close()
			return
		}
	}
}

// stall holds every byte from now on, both ways.
func (l *tcpLink) stall() {
	l.mu.Lock()
	l.stalled = true
	l.mu.Unlock()
}

// cut drops the link's connections and what they held, and refuses new
// ones.
func (l *tcpLink) cut() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.isCut {
		return
	}
	l.isCut = true
	l.ln.Close()
	for _, c := range l.conns {
		c.Close() // what the relays hold is never written
	}
	l.changed.Broadcast()
}
