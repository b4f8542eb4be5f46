package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"

	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"

	"github.com/payoutd/payoutd/internal/database"
	"github.com/payoutd/payoutd/models"
)

// recreateDatabase drops and creates the database named in databaseURL,
// through the "postgres" maintenance database of the same server. It only
// does so on a server of this machine, and never to a system database.
func recreateDatabase(ctx context.Context, databaseURL string) error {
	if d, err := database.DialectOf(databaseURL); err != nil || d != database.Postgres {
		return fmt.Errorf("-database-url must be a postgres:// URL, not %q", redact(databaseURL))
	}
	u, err := url.Parse(databaseURL)
	if err != nil {
		return fmt.Errorf("-database-url: %w", err)
	}
	name := strings.TrimPrefix(u.Path, "/")
	switch name {
	case "", "postgres", "template0", "template1":
		return fmt.Errorf("-database-url names database %q: the tool drops and recreates it, so name a database of its own (e.g. payoutd_load)", name)
	}
	if !isLoopback(u.Hostname()) {
		return fmt.Errorf("-database-url: refusing to drop database %q on %s: the tool recreates databases only on this machine (use -target to load a server elsewhere)", name, u.Host)
	}
	maintenance := *u
	maintenance.Path = "/postgres"
	db, err := database.Open(maintenance.String())
	if err != nil {
		return err
	}
	defer closeDB(db)
	ident := quoteIdent(name)
	if err := db.WithContext(ctx).Exec("DROP DATABASE IF EXISTS " + ident + " WITH (FORCE)").Error; err != nil {
		return fmt.Errorf("drop database %s: %w", ident, err)
	}
	if err := db.WithContext(ctx).Exec("CREATE DATABASE " + ident).Error; err != nil {
		return fmt.Errorf("create database %s: %w", ident, err)
	}
	return nil
}

// flushRedis empties the Redis database named in redisURL, where the API
// enqueues payout:submit, so that no queue of an earlier run distorts the
// drain. Only a server of this machine, and never database 0, which is
// everyone's default.
func flushRedis(ctx context.Context, redisURL string) error {
	opts, err := redis.ParseURL(redisURL)
	if err != nil {
		return fmt.Errorf("-redis-url: %w", err)
	}
	host, _, err := net.SplitHostPort(opts.Addr)
	if err != nil {
		host = opts.Addr
	}
	if !isLoopback(host) {
		return fmt.Errorf("-redis-url: refusing to flush Redis on %s: the tool flushes only a Redis of this machine", opts.Addr)
	}
	if opts.DB == 0 {
		return fmt.Errorf("-redis-url %s: the tool flushes the Redis database it enqueues into; name one of its own, e.g. %s", redact(redisURL), defaultRedisURL)
	}
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	if err := rdb.FlushDB(ctx).Err(); err != nil {
		return fmt.Errorf("flush Redis database %d: %w", opts.DB, err)
	}
	return nil
}

func newRedisClient(url string) *redis.Client {
	opts, err := redis.ParseURL(url)
	if err != nil {
		return nil
	}
	return redis.NewClient(opts)
}

func closeDB(db *gorm.DB) {
	if sqlDB, err := db.DB(); err == nil {
		sqlDB.Close()
	}
}

// quoteIdent quotes a PostgreSQL identifier.
func quoteIdent(name string) string {
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// redact hides the password of a URL for printing.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}

// checkpoint makes PostgreSQL write out every dirty page before a phase,
// so that no phase pays for the last one's writes or for a checkpoint the
// last one's WAL set off, and each pays for its own first writes after a
// checkpoint (full-page images), as the pgbench ceilings do. A server
// that refuses (no superuser) is measured without it, with a warning.
func checkpoint(ctx context.Context, db *gorm.DB, stderr io.Writer) {
	if database.DialectOfDB(db) != database.Postgres {
		return // SQLite (the tests' embedded backend) has no CHECKPOINT
	}
	if err := db.WithContext(ctx).Exec(`CHECKPOINT`).Error; err != nil {
		progress(stderr, "warning: CHECKPOINT before the phase failed (%v); measuring without it", err)
	}
}

// disbursementCounts is one look at the disbursements table.
type disbursementCounts struct {
	success, open, requested, failed int
}

// countDisbursements counts by status, in SQL that PostgreSQL and SQLite
// both read.
func countDisbursements(ctx context.Context, db *gorm.DB) (disbursementCounts, error) {
	var c disbursementCounts
	row := db.WithContext(ctx).Raw(`SELECT
		count(*) FILTER (WHERE status = @success),
		count(*) FILTER (WHERE status IN @open),
		count(*) FILTER (WHERE status = @requested),
		count(*) FILTER (WHERE status IN @failed)
		FROM disbursements`,
		sql.Named("success", models.StatusSuccess),
		sql.Named("open", []models.DisbursementStatus{models.StatusVerified, models.StatusRequested}),
		sql.Named("requested", models.StatusRequested),
		sql.Named("failed", []models.DisbursementStatus{models.StatusFailed, models.StatusExpired, models.StatusCancelled}),
	).Row()
	if err := row.Scan(&c.success, &c.open, &c.requested, &c.failed); err != nil {
		return c, fmt.Errorf("count disbursements: %w", err)
	}
	return c, nil
}
