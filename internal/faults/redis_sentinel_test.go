package faults

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// The Redis primary dies under load (SIGKILL) while the service reaches it
// through three Sentinels (REDIS_URL=redis-sentinel://…): the Sentinels
// promote the replica, the API and the worker follow it by themselves, and
// creates resume. Every payout committed before, during and after is paid
// exactly once: tasks that were only on the dead primary (replication is
// asynchronous) are not needed, because the disbursement rows are the
// outbox: the submit pumps read due payouts from the table and the sweeps
// re-enqueue status checks and webhooks that are overdue.
func TestRedisSentinelFailover(t *testing.T) {
	scenario(t, quick)
	redisSet := startSentinelSet(t)
	c := newCluster(t, redisSet.url())
	c.startAPI()
	c.startPayoutd("worker", []string{"worker"})

	ctx, stop := context.WithTimeout(context.Background(), 14*time.Second)
	defer stop()
	d := c.drive(ctx, 8, 30*time.Second)
	time.Sleep(4 * time.Second)
	redisSet.primary.kill()
	d.markFault()
	killed := time.Now()
	waitFor(t, "the Sentinels promote the replica", 30*time.Second, func() bool {
		return redisSet.masterAddr() == redisSet.replicaAddr
	})
	t.Logf("the Sentinels promoted %s %.1fs after the primary was killed", redisSet.replicaAddr, time.Since(killed).Seconds())
	d.wait()

	s := c.settle("redis-sentinel-failover", d, 2*time.Minute)
	if s.committed == 0 || s.succeeded == 0 {
		t.Fatalf("nothing was paid: %s", s)
	}
	d.mu.Lock()
	resumed := !d.resumedAt.IsZero()
	d.mu.Unlock()
	if !resumed {
		t.Fatal("no create was accepted after the primary was killed: the service did not follow the failover")
	}
}

// sentinelSet is a Redis primary, its replica and three Sentinels watching
// them as "payoutd", each on a loopback port of the test's own.
type sentinelSet struct {
	t                        *testing.T
	primary, replica         *proc
	primaryAddr, replicaAddr string
	sentinels                []string
}

const sentinelMaster = "payoutd"

// url is the REDIS_URL of the set.
func (s *sentinelSet) url() string {
	return fmt.Sprintf("redis-sentinel://%s/0?master=%s", strings.Join(s.sentinels, ","), sentinelMaster)
}

// startSentinelSet starts the set and waits until every Sentinel knows
// the replica and the other two Sentinels (else a failover could not be
// agreed on).
func startSentinelSet(t *testing.T) *sentinelSet {
	t.Helper()
	server, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatal("redis-server is not installed (apt-get install redis-server; make faults installs it)")
	}
	dir := t.TempDir()
	s := &sentinelSet{t: t, primaryAddr: freeAddr(t), replicaAddr: freeAddr(t)}
	node := func(addr string, extra ...string) []string {
		_, port, _ := net.SplitHostPort(addr)
		nodeDir := filepath.Join(dir, port)
		os.MkdirAll(nodeDir, 0o700)
		return append([]string{"--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", nodeDir}, extra...)
	}
	s.primary = startProc(t, "redis primary", server, node(s.primaryAddr), nil)
	host, port, _ := net.SplitHostPort(s.primaryAddr)
	s.replica = startProc(t, "redis replica", server, node(s.replicaAddr, "--replicaof", host, port), nil)
	for i := range 3 {
		addr := freeAddr(t)
		_, sport, _ := net.SplitHostPort(addr)
		conf := filepath.Join(dir, "sentinel-"+sport+".conf")
		// Sentinel rewrites its file as it learns the set: it must be its own.
		body := fmt.Sprintf("port %s\nbind 127.0.0.1\ndir %s\nsentinel monitor %s %s %s 2\n"+
			"sentinel down-after-milliseconds %s 1000\nsentinel failover-timeout %s 10000\nsentinel parallel-syncs %s 1\n",
			sport, dir, sentinelMaster, host, port, sentinelMaster, sentinelMaster, sentinelMaster)
		if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		startProc(t, fmt.Sprintf("sentinel %d", i+1), server, []string{conf, "--sentinel"}, nil)
		s.sentinels = append(s.sentinels, addr)
	}
	waitFor(t, "the replica in sync and every Sentinel knowing the set", 30*time.Second, func() bool {
		replica := redis.NewClient(&redis.Options{Addr: s.replicaAddr})
		defer replica.Close()
		info, err := replica.Info(context.Background(), "replication").Result()
		if err != nil || !strings.Contains(info, "master_link_status:up") {
			return false
		}
		for _, addr := range s.sentinels {
			sc := redis.NewSentinelClient(&redis.Options{Addr: addr})
			replicas, err1 := sc.Replicas(context.Background(), sentinelMaster).Result()
			others, err2 := sc.Sentinels(context.Background(), sentinelMaster).Result()
			sc.Close()
			if err1 != nil || err2 != nil || len(replicas) != 1 || len(others) != 2 {
				return false
			}
		}
		return true
	})
	return s
}

// masterAddr is the primary the first Sentinel that answers names now.
func (s *sentinelSet) masterAddr() string {
	for _, addr := range s.sentinels {
		sc := redis.NewSentinelClient(&redis.Options{Addr: addr})
		got, err := sc.GetMasterAddrByName(context.Background(), sentinelMaster).Result()
		sc.Close()
		if err == nil && len(got) == 2 {
			return net.JoinHostPort(got[0], got[1])
		}
	}
	return ""
}
