// Package faults holds the fault scenarios of `make faults`: the service
// run as real `payoutd api` and `payoutd worker` processes on loopback,
// merchants creating payouts through signed HTTP, and one fault injected
// meanwhile (a Redis primary killed under Sentinel, PostgreSQL restarted
// or its leader killed under Patroni, a process killed). Each scenario is a
// test that stops by itself, checks that nothing committed was lost and
// nothing was paid twice, runs `payoutd admin reconcile`, and prints one
// summary line:
//
//	fault=<name> sent=<n> committed=<n> succeeded=<n> failed_cleanly=<n> lost=0 double_paid=0 recovery_s=<x>
//
// It then checks the scenario's history, every create attempt and the
// balance reads taken alongside with the times they were sent and
// answered, for linearizability against a model of the wallet
// (porcupine; history_test.go, walletmodel_test.go), and prints the
// verdict on the next line:
//
//	history=linearizable ops=<n> check_s=<x>
//
// The scenarios run only when PAYOUTD_FAULTS is set: "quick" for the short
// ones (CI, through make test), "all" for every one (make faults).
//
// TestSoak (make soak, PAYOUTD_SOAK=1) runs the same processes for
// SOAK_DURATION at half their measured capacity, with every kind of fault
// at random times, samples what a leak or a drift shows in every 10 s, and
// prints a table, draws a plot, and fails on unbounded growth, a p99 drift,
// or what the scenarios fail on. The package has no code outside its tests.
package faults
