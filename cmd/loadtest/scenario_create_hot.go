package main

// Scenario create-hot measures disbursement creates (creates.go) all on
// one wallet of one client (8 workers, closed loop): the wallet's row lock
// is the bound. Goal: goalCreatesHot creates/s with p99 under
// goalCreateP99; in disbursements and all, at least goalCeilingRatio of
// the pgbench hot-row ceiling.

func newCreateHotScenario(o options) Scenario { return newCreateScenario(true, o.amount) }
