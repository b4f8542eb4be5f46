package ledger_test

import (
	"context"
	"io"
	"net"
	"net/url"
	"sync"
	"testing"

	"gorm.io/gorm"

	"github.com/payoutd/payoutd/internal/database"
	"github.com/payoutd/payoutd/internal/testenv"
	"github.com/payoutd/payoutd/ledger"
	"github.com/payoutd/payoutd/models"
)

// A connection that breaks under the wallets' update (a PostgreSQL crash
// or failover) is the database being unavailable, as under any other
// statement: the API answers 503 and the vendor or merchant retries. The
// update runs outside gorm (the PostgreSQL driver's ApplyWalletChanges), and its error once reached the
// API raw: a PostgreSQL failover fault run saw a vendor callback answered
// 500 "unexpected EOF".
func TestWalletUpdateOnABrokenConnectionIsUnavailable(t *testing.T) {
	t.Parallel()
	db, dbURL := testenv.DBWithURL(t)
	if database.DialectOfDB(db) != database.Postgres {
		t.Skip("a connection to break needs PostgreSQL (TEST_DATABASE_URL)")
	}
	w := newWallet(t, db)
	if _, err := ledger.Adjust(context.Background(), db, models.Now(), w.ID, models.Rupiah(1_000_000), "funding"); err != nil {
		t.Fatal(err)
	}
	lock := models.NewID()
	if err := db.Transaction(func(tx *gorm.DB) error {
		_, err := ledger.LockFunds(tx, w.ID, []ledger.Lock{{DisbursementID: lock, Amount: models.Rupiah(100_000)}}, models.Now())
		return err
	}); err != nil {
		t.Fatal(err)
	}

	proxy := newCuttingProxy(t, dbURL)
	viaProxy, err := database.Open(proxy.url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if sqlDB, err := viaProxy.DB(); err == nil {
			sqlDB.Close()
		}
	})
	err = viaProxy.Transaction(func(tx *gorm.DB) error {
		if err := tx.Exec("SELECT 1").Error; err != nil { // the transaction holds its connection
			return err
		}
		proxy.cut()
		return ledger.ReleaseLocks(tx, []ledger.Release{{WalletID: w.ID, Amount: models.Rupiah(100_000), DisbursementID: lock}}, models.Now())
	})
	if err == nil {
		t.Fatal("the release committed over a cut connection")
	}
	if got := database.Classify(err); got != database.Unavailable {
		t.Errorf("Classify(%v) = %d, want Unavailable (%d): the API would answer 500", err, got, database.Unavailable)
	}
	if got, err := models.NewStore(db).FindWallet(context.Background(), w.ID); err != nil || got.Locked != models.Rupiah(100_000) {
		t.Errorf("wallet after the broken release: %+v, %v; want the lock kept", got, err)
	}
}

// cuttingProxy forwards TCP connections to PostgreSQL until cut closes
// every one of them, as a crashed server or a failover does.
type cuttingProxy struct {
	url   string
	mu    sync.Mutex
	conns []net.Conn
}

func newCuttingProxy(t *testing.T, dbURL string) *cuttingProxy {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	target := u.Host
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	u.Host = ln.Addr().String()
	p := &cuttingProxy{url: u.String()}
	go func() {
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			server, err := net.Dial("tcp", target)
			if err != nil {
				client.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, client, server)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(server, client); server.Close() }()
			go func() { _, _ = io.Copy(client, server); client.Close() }()
		}
	}()
	t.Cleanup(p.cut)
	return p
}

func (p *cuttingProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}
