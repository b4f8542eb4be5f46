package main

// Scenario create-many measures disbursement creates (creates.go) spread
// round-robin over every client's wallet (16 workers, closed loop), the api
// answering without waiting for the worker. Goal: goalCreatesMany
// creates/s with p99 under goalCreateP99; in disbursements and all, at
// least goalCeilingRatio of the pgbench spread ceiling.

func newCreateManyScenario(o options) Scenario { return newCreateScenario(false, o.amount) }
