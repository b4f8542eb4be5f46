// Package testenv gives tests their backends: a fresh, migrated database and
// a Redis client. With TEST_DATABASE_URL and TEST_REDIS_URL set (CI always
// sets them) they are real PostgreSQL and Redis; otherwise a SQLite file and
// miniredis, so the same suites run on the embedded backends of `payoutd dev`.
// Under CI=true a missing variable fails the test instead: CI must never
// pass on the embedded backends by accident.
package testenv

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"

	"github.com/payoutd/payoutd/internal/database"
	"github.com/payoutd/payoutd/internal/redisconn"
)

// DB returns a migrated database of its own for this test, dropped at the end.
func DB(t testing.TB) *gorm.DB {
	t.Helper()
	db, _ := DBWithURL(t)
	return db
}

// DBWithURL is DB that also returns the database's URL, for tests that start
// a second process or open a second handle.
func DBWithURL(t testing.TB) (*gorm.DB, string) {
	t.Helper()
	var dbURL string
	if base := requiredInCI(t, "TEST_DATABASE_URL"); base != "" {
		dbURL = postgresDatabase(t, base)
	} else {
		dbURL = "sqlite://" + filepath.Join(t.TempDir(), "test.db")
	}
	db, err := database.Open(dbURL)
	if err != nil {
		t.Fatalf("open test database: %v", err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		t.Fatal(err)
	}
	// Test packages run in parallel, each with parallel tests: a pool of
	// the production size per test would exhaust PostgreSQL's connections.
	if database.DialectOfDB(db) == database.Postgres {
		sqlDB.SetMaxOpenConns(maxTestConns)
		sqlDB.SetMaxIdleConns(maxTestConns)
	}
	t.Cleanup(func() { sqlDB.Close() })
	if database.DialectOfDB(db) == database.SQLite {
		if _, err := database.Migrate(context.Background(), db); err != nil {
			t.Fatalf("migrate test database: %v", err)
		}
	}
	return db, dbURL
}

// requiredInCI returns the value of the environment variable name. Under
// CI=true an empty one fails the test, which would otherwise run on SQLite
// or miniredis and prove nothing about PostgreSQL and Redis.
func requiredInCI(t testing.TB, name string) string {
	t.Helper()
	v := os.Getenv(name)
	if v == "" && os.Getenv("CI") == "true" {
		t.Fatalf("CI=true but %s is not set: CI runs every suite against real PostgreSQL and Redis "+
			"(TEST_DATABASE_URL=postgres://..., TEST_REDIS_URL=redis://...); unset CI to use the embedded backends", name)
	}
	return v
}

// maxTestConns bounds each test database's pool.
const maxTestConns = 6

var (
	templateOnce sync.Once
	templateName string
	templateErr  error
)

// postgresDatabase creates a database for one test from a migrated template
// (a copy costs tens of milliseconds, a migration much more) and drops it
// when the test ends.
func postgresDatabase(t testing.TB, baseURL string) string {
	t.Helper()
	admin, err := database.Open(baseURL)
	if err != nil {
		t.Fatalf("open TEST_DATABASE_URL: %v", err)
	}
	adminSQL, _ := admin.DB()
	defer adminSQL.Close()

	templateOnce.Do(func() { templateName, templateErr = ensureTemplate(admin, baseURL) })
	if templateErr != nil {
		t.Fatalf("prepare template database: %v", templateErr)
	}
	name := "payoutd_test_" + randomHex(6)
	var createErr error
	for attempt := 0; attempt < 20; attempt++ {
		createErr = admin.Exec(fmt.Sprintf(`CREATE DATABASE %s TEMPLATE %s`, name, templateName)).Error
		// Two copies of one template at once may collide; wait and retry.
		if createErr == nil || !strings.Contains(createErr.Error(), "being accessed by other users") {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if createErr != nil {
		t.Fatalf("create test database: %v", createErr)
	}
	t.Cleanup(func() {
		cleanup, err := database.Open(baseURL)
		if err != nil {
			return
		}
		cleanup.Exec(fmt.Sprintf(`DROP DATABASE IF EXISTS %s WITH (FORCE)`, name))
		if sqlDB, err := cleanup.DB(); err == nil {
			sqlDB.Close()
		}
	})
	return withDatabaseName(t, baseURL, name)
}

// ensureTemplate creates (once per schema version, shared by every test
// process) a template database holding the migrated schema.
func ensureTemplate(admin *gorm.DB, baseURL string) (string, error) {
	name := "payoutd_tpl_" + migrationsDigest()
	conn, err := admin.DB()
	if err != nil {
		return "", err
	}
	ctx := context.Background()
	c, err := conn.Conn(ctx)
	if err != nil {
		return "", err
	}
	defer c.Close()
	// Test processes of several packages start together: one creates it.
	if _, err := c.ExecContext(ctx, `SELECT pg_advisory_lock(727274)`); err != nil {
		return "", err
	}
	defer c.ExecContext(ctx, `SELECT pg_advisory_unlock(727274)`)
	var exists bool
	if err := c.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name).Scan(&exists); err != nil {
		return "", err
	}
	if exists {
		return name, nil
	}
	building := name + "_building"
	if _, err := c.ExecContext(ctx, fmt.Sprintf(`DROP DATABASE IF EXISTS %s WITH (FORCE)`, building)); err != nil {
		return "", err
	}
	if _, err := c.ExecContext(ctx, fmt.Sprintf(`CREATE DATABASE %s`, building)); err != nil {
		return "", err
	}
	tplURL, err := replaceDatabaseName(baseURL, building)
	if err != nil {
		return "", err
	}
	tpl, err := database.Open(tplURL)
	if err != nil {
		return "", err
	}
	_, migrateErr := database.Migrate(ctx, tpl)
	if sqlDB, err := tpl.DB(); err == nil {
		sqlDB.Close()
	}
	if migrateErr != nil {
		return "", migrateErr
	}
	// Renamed only when complete, so no process copies a half-built template.
	if _, err := c.ExecContext(ctx, fmt.Sprintf(`ALTER DATABASE %s RENAME TO %s`, building, name)); err != nil {
		return "", err
	}
	return name, nil
}

// migrationsDigest names the template after the migrations it holds, so a
// changed schema never reuses a stale template.
func migrationsDigest() string {
	files, err := database.MigrationFiles(database.Postgres)
	if err != nil {
		panic(err)
	}
	h := sha256.New()
	fs.WalkDir(files, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, _ := fs.ReadFile(files, path)
		h.Write([]byte(path))
		h.Write(b)
		return nil
	})
	return hex.EncodeToString(h.Sum(nil))[:12]
}

func withDatabaseName(t testing.TB, baseURL, name string) string {
	t.Helper()
	u, err := replaceDatabaseName(baseURL, name)
	if err != nil {
		t.Fatalf("TEST_DATABASE_URL: %v", err)
	}
	return u
}

func replaceDatabaseName(baseURL, name string) (string, error) {
	u, err := url.Parse(baseURL)
	if err != nil {
		return "", err
	}
	u.Path = "/" + name
	return u.String(), nil
}

// Redis returns a Redis client: TEST_REDIS_URL's server, or a miniredis of
// this test's own. Keys tests write carry unique ids, so tests share a real
// server safely.
func Redis(t testing.TB) (*redis.Client, *miniredis.Miniredis) {
	t.Helper()
	if raw := requiredInCI(t, "TEST_REDIS_URL"); raw != "" {
		opts, err := redis.ParseURL(raw)
		if err != nil {
			t.Fatalf("TEST_REDIS_URL: %v", err)
		}
		rdb := redis.NewClient(opts)
		t.Cleanup(func() { rdb.Close() })
		return rdb, nil
	}
	mr := embeddedRedis(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { rdb.Close() })
	return rdb, mr
}

// embeddedRedis is a miniredis that answers the start's eviction check as
// a Redis configured for the service does (it never evicts).
func embeddedRedis(t testing.TB) *miniredis.Miniredis {
	t.Helper()
	mr := miniredis.RunT(t)
	if err := redisconn.AnswerEvictionPolicy(mr); err != nil {
		t.Fatal(err)
	}
	return mr
}

// Redis databases RedisDatabase leases on TEST_REDIS_URL's server: clear of
// 0 (the shared suites' default) and 9 (cmd/loadtest's).
const (
	firstLeasedDB = 10
	lastLeasedDB  = 15
	leaseTTL      = time.Minute // renewed while the test runs
	leaseWait     = 2 * time.Minute
)

// RedisDatabase returns the URL of a flushed Redis database the test has to
// itself, for tests that run a whole service (another process, a proxy in
// front of Redis) and so cannot keep to a queue prefix. On TEST_REDIS_URL's
// server it leases one of databases 10 to 15 with a key in the URL's own
// database, held until the test ends: test processes running at once (other
// packages, other checkouts on the machine) never flush each other's data.
// Without TEST_REDIS_URL it is a miniredis of the test's own.
func RedisDatabase(t testing.TB) string {
	t.Helper()
	raw := requiredInCI(t, "TEST_REDIS_URL")
	if raw == "" {
		return "redis://" + embeddedRedis(t).Addr() + "/0"
	}
	opts, err := redis.ParseURL(raw)
	if err != nil {
		t.Fatalf("TEST_REDIS_URL: %v", err)
	}
	leases := redis.NewClient(opts)
	token := randomHex(8)
	n, key := leaseRedisDatabase(t, leases, opts.DB, token)
	holdLease(t, leases, key, token)
	flushRedisDatabase(t, opts, n)
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatalf("TEST_REDIS_URL: %v", err)
	}
	u.Path = fmt.Sprintf("/%d", n)
	return u.String()
}

// leaseRedisDatabase takes, under token, the lease of the first of
// databases firstLeasedDB to lastLeasedDB that is free (never leasesDB,
// which holds the leases), waiting up to leaseWait for one. It returns the
// database and its lease's key; failing, it closes leases.
func leaseRedisDatabase(t testing.TB, leases *redis.Client, leasesDB int, token string) (int, string) {
	t.Helper()
	ctx := context.Background()
	for deadline := time.Now().Add(leaseWait); ; {
		for n := firstLeasedDB; n <= lastLeasedDB; n++ {
			if n == leasesDB {
				continue // holds the leases, and other tests' queues
			}
			key := fmt.Sprintf("payoutd:testenv:redis-db:%d", n)
			ok, err := leases.SetNX(ctx, key, token, leaseTTL).Result()
			if err != nil {
				leases.Close()
				t.Fatalf("lease a Redis database: %v", err)
			}
			if ok {
				return n, key
			}
		}
		if time.Now().After(deadline) {
			leases.Close()
			t.Fatalf("no Redis database %d-%d free for %s", firstLeasedDB, lastLeasedDB, leaseWait)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// holdLease renews the lease key (held under token) until the test ends,
// then releases it and closes leases.
func holdLease(t testing.TB, leases *redis.Client, key, token string) {
	ctx := context.Background()
	stop := make(chan struct{})
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		tick := time.NewTicker(leaseTTL / 3)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				leaseScript.Run(ctx, leases, []string{key}, token, leaseTTL.Milliseconds())
			}
		}
	}()
	t.Cleanup(func() {
		close(stop)
		<-renewed
		leaseScript.Run(ctx, leases, []string{key}, token, 0)
		leases.Close()
	})
}

// flushRedisDatabase empties database n of opts's server.
func flushRedisDatabase(t testing.TB, opts *redis.Options, n int) {
	t.Helper()
	db := *opts
	db.DB = n
	rdb := redis.NewClient(&db)
	defer rdb.Close()
	if err := rdb.FlushDB(context.Background()).Err(); err != nil {
		t.Fatalf("flush Redis database %d: %v", n, err)
	}
}

// leaseScript renews a lease for ARGV[2] ms, or releases it when that is 0,
// only while ARGV[1] holds it.
var leaseScript = redis.NewScript(`
if redis.call("GET", KEYS[1]) ~= ARGV[1] then return 0 end
if tonumber(ARGV[2]) == 0 then return redis.call("DEL", KEYS[1]) end
return redis.call("PEXPIRE", KEYS[1], ARGV[2])`)

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// Queue returns the asynq connection of this test's Redis (Redis(t)'s
// server) and a queue-name prefix of its own: tests sharing a real Redis
// then never take each other's tasks.
func Queue(t testing.TB, rdb *redis.Client) (asynq.RedisConnOpt, string) {
	t.Helper()
	o := rdb.Options()
	return asynq.RedisClientOpt{Addr: o.Addr, DB: o.DB, Username: o.Username, Password: o.Password},
		"t" + randomHex(4) + ":"
}
