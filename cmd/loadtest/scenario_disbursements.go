package main

// Scenario disbursements measures the create path and the worker against
// the machine's own ceiling: the pgbench ceilings (spread, hot row), then
// create-many and create-hot against the api alone, the worker's drain of
// what they queued, and the concurrent phase with both together. One
// table shows each figure as a ratio of its ceiling (spread for
// create-many, hot row for create-hot and the drain), so that the figures
// mean the same on any machine. Goals: each phase's own (its scenario's
// file), and every ratio at least goalCeilingRatio.

// disbursementsSuite is the ceilings, create-many, create-hot, the drain
// and the concurrent phase.
func disbursementsSuite(o options) suitePlan {
	return suitePlan{ceilings: createShapeRuns(o), apiPhases: []string{"create-many", "create-hot"}, drain: true, concurrent: true}
}
