// Package sim is a seeded, deterministic simulation of the payout
// lifecycle: the service's own code (package payouts' rules, dispatch's
// sweep and tasks, the ledger and its reconcile) on an in-process SQLite
// database, driven one step at a time by one seed against a simulated
// clock, a simulated vendor and simulated faults.
//
// One seed is one history: every choice (which operation runs next, what
// the vendor answers, which statement loses its connection, when a
// process dies) is drawn from a generator seeded with it, so the same
// seed gives the same history, byte for byte. After every step the
// invariants are checked (check.go); a failure names the seed and the
// shortest prefix of its history that shows it.
//
// How it stays deterministic although the code it runs blocks and spawns
// goroutines: every operation (a create, a sweep, a task, a callback) runs
// on a goroutine of its own, but only one holds the baton at a time
// (sched.go). An operation gives the baton back only where a real
// process waits for the network (a vendor call, before the request
// reaches the vendor and before its answer comes back), which is where
// processes interleave in ways that matter for money; a database
// transaction runs whole. Nothing reads the wall clock: the services, gorm
// and the vendor read the simulated one.
//
// cmd/payoutsim runs seeds (make sim).
package sim
