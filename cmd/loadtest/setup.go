package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"

	"github.com/payoutd/payoutd/admin"
	"github.com/payoutd/payoutd/internal/database"
)

// openingBalance funds every load-test wallet (IDR).
const openingBalance = "1000000000"

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

// provision creates n merchant clients, each with one funded wallet on
// vendor.
func provision(ctx context.Context, d admin.Deps, n int, vendor string) (*Fixture, error) {
	f := &Fixture{Clients: make([]LoadClient, 0, n), Admin: d}
	for i := range n {
		creds, err := admin.CreateClient(ctx, d, admin.ClientOptions{Name: fmt.Sprintf("Load test merchant %d", i+1)})
		if err != nil {
			return nil, fmt.Errorf("create client: %w", err)
		}
		if creds.SigningSecret == nil {
			return nil, errors.New("create client: no signing secret issued")
		}
		clientID, err := uuid.Parse(creds.ClientID)
		if err != nil {
			return nil, err
		}
		w, err := admin.CreateWallet(ctx, d, admin.WalletOptions{ClientID: clientID, Name: "Load test wallet", Vendor: vendor})
		if err != nil {
			return nil, fmt.Errorf("create wallet: %w", err)
		}
		walletID, err := uuid.Parse(w.WalletID)
		if err != nil {
			return nil, err
		}
		if _, err := admin.AdjustWallet(ctx, d, walletID, openingBalance, "load test opening balance"); err != nil {
			return nil, fmt.Errorf("fund wallet: %w", err)
		}
		f.Clients = append(f.Clients, LoadClient{
			ClientID: creds.ClientID, APIKey: creds.APIKey, SigningSecret: *creds.SigningSecret, WalletID: w.WalletID,
		})
	}
	return f, nil
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
