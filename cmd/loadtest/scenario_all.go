package main

// Scenario all is disbursements with balance reads and payments added, in
// one table: the pgbench select-only ceiling too, the reads of scenario
// balance before create-many (their rate a ratio of the select-only
// ceiling), and payments after create-hot (a ratio of the spread
// ceiling). Goals: each phase's own (its scenario's file), and every
// ratio at least goalCeilingRatio.

// allSuite is disbursements' plan with the reads and payments added.
func allSuite(o options) suitePlan {
	return suitePlan{
		// Select-only first, on the freshly made table as -scenario
		// balance reads it; then spread and hot row for the creates.
		ceilings: append([]ceilingRun{selectOnlyRun(o)}, createShapeRuns(o)...),
		// The reads first, on tables no create has written to yet, as
		// -scenario balance reads them.
		apiPhases:  []string{"balance", "create-many", "create-hot", "payments"},
		drain:      true,
		concurrent: true,
	}
}
