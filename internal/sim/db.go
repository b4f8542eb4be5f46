package sim

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"sync"

	_ "github.com/glebarez/go-sqlite" // registers "sqlite", the driver faultDriver wraps
)

// driverName is the database/sql driver the simulation opens SQLite with:
// the pure-Go driver behind faultDriver.
const driverName = "payoutsim-sqlite"

var registerOnce sync.Once

// registerDriver registers faultDriver once per process. Which world it
// asks is set per run (current), as runs are sequential.
func registerDriver() {
	registerOnce.Do(func() {
		db, err := sql.Open("sqlite", ":memory:")
		if err != nil {
			panic(err)
		}
		base := db.Driver()
		_ = db.Close()
		sql.Register(driverName, faultDriver{base: base})
	})
}

// world is the run the fault driver serves (runs are sequential).
var world struct {
	sync.Mutex
	w *World
}

func currentWorld() *World {
	world.Lock()
	defer world.Unlock()
	return world.w
}

// errConnectionLost is what a statement gets when the simulation drops
// its connection (or its process died): the driver's error for a
// connection that broke under a statement.
var errConnectionLost = errors.New("sim: connection lost")

// A fault at a statement, drawn by World.statementFault.
type fault int

const (
	noFault     fault = iota
	failBefore        // the connection drops before the statement runs
	failAfter         // it runs (a COMMIT commits), then the answer is lost
	crashBefore       // the process dies before the statement runs
	crashAfter        // it runs, then the process dies before it hears back
)

// faultDriver wraps the SQLite driver so that the simulation can drop a
// connection, lose an answer or kill the process at any statement, and so
// that nothing a dead process still tries reaches the database.
type faultDriver struct{ base driver.Driver }

func (d faultDriver) Open(name string) (driver.Conn, error) {
	c, err := d.base.Open(name)
	if err != nil {
		return nil, err
	}
	return &faultConn{base: c}, nil
}

type faultConn struct{ base driver.Conn }

// around runs a statement under the simulation's faults: kind names it
// for the history ("exec", "query", "begin", "commit"). discard undoes
// what a statement that ran left open when its answer is lost (the rows
// of a query, the transaction a BEGIN opened), as the server does when the
// connection dies.
func around[T any](ctx context.Context, kind string, run func() (T, error), discard func(T)) (T, error) {
	var zero T
	w := currentWorld()
	if w == nil {
		return run()
	}
	o := w.sched.current()
	if o == nil { // set-up and checks: no faults
		return run()
	}
	if o.dead() {
		return zero, errConnectionLost
	}
	if w.clock.pastDeadline(ctx) {
		return zero, context.DeadlineExceeded
	}
	switch f := w.statementFault(o, kind); f {
	case failBefore:
		return zero, errConnectionLost
	case crashBefore:
		w.crash(o.proc, fmt.Sprintf("before %s", kind))
		return zero, errConnectionLost
	case failAfter, crashAfter:
		v, err := run()
		if err != nil {
			return zero, err
		}
		if discard != nil {
			discard(v)
		}
		if f == crashAfter {
			w.crash(o.proc, fmt.Sprintf("after %s", kind))
		}
		return zero, errConnectionLost
	}
	return run()
}

func (c *faultConn) Prepare(query string) (driver.Stmt, error) { return c.base.Prepare(query) }
func (c *faultConn) Close() error                              { return c.base.Close() }
func (c *faultConn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

func (c *faultConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	return c.base.(driver.ConnPrepareContext).PrepareContext(ctx, query)
}

func (c *faultConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	tx, err := around(ctx, "begin", func() (driver.Tx, error) {
		return c.base.(driver.ConnBeginTx).BeginTx(ctx, opts)
	}, func(tx driver.Tx) { _ = tx.Rollback() })
	if err != nil {
		return nil, err
	}
	return &faultTx{base: tx, ctx: ctx}, nil
}

func (c *faultConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	return around(ctx, "exec", func() (driver.Result, error) {
		return c.base.(driver.ExecerContext).ExecContext(ctx, query, args)
	}, nil)
}

func (c *faultConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	return around(ctx, "query", func() (driver.Rows, error) {
		return c.base.(driver.QueryerContext).QueryContext(ctx, query, args)
	}, func(rows driver.Rows) { _ = rows.Close() })
}

func (c *faultConn) Ping(ctx context.Context) error { return c.base.(driver.Pinger).Ping(ctx) }

// faultTx is a transaction with the context it began under: a commit
// after its deadline fails, as database/sql's would.
type faultTx struct {
	base driver.Tx
	ctx  context.Context
}

// Commit may commit and still answer an error: the answer lost.
func (t *faultTx) Commit() error {
	_, err := around(t.ctx, "commit", func() (struct{}, error) { return struct{}{}, t.base.Commit() }, nil)
	if errors.Is(err, errConnectionLost) || errors.Is(err, context.DeadlineExceeded) {
		// A commit that never ran (its connection dropped, its context's
		// deadline past) is a transaction the server rolled back; roll it
		// back here so that the
		// one connection is usable again (a no-op when it committed).
		_ = t.base.Rollback()
	}
	return err
}

// Rollback always runs: it is what the server does to a dead
// connection's transaction.
func (t *faultTx) Rollback() error { return t.base.Rollback() }
