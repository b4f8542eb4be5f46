package payouts

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/payoutd/payoutd/internal/database"
	"github.com/payoutd/payoutd/internal/database/pgdriver"
	"github.com/payoutd/payoutd/models"
)

// A pump's claim costs the same behind a backlog as without one: the
// limited, locking subquery that picks the due payouts runs once, and the
// update finds the rows it chose by id. Repeating the due condition in the
// update let PostgreSQL drive the update from disbursements_submit_due and
// run the subquery once per due payout; behind a few thousand a claim took
// 52 ms and the worker fell seconds behind the API (the load tool's hot
// then spread phases).
func TestClaimRunsItsChoiceOnceBehindABacklog(t *testing.T) {
	t.Parallel()
	f, _, _ := batchFixture(t)
	if database.DialectOfDB(f.db) != database.Postgres {
		t.Skip("PostgreSQL's plan; SQLite has one writer and no SKIP LOCKED")
	}
	// The statistics say almost nothing is due, as they did when the load
	// tool analysed the table between phases; then the backlog comes.
	f.stored(models.StatusVerified, models.Rupiah(10_000))
	if err := f.db.Exec("ANALYZE disbursements").Error; err != nil {
		t.Fatal(err)
	}
	for range 300 {
		f.stored(models.StatusVerified, models.Rupiah(10_000))
	}
	now := time.Now()
	query, args := pgdriver.ClaimDueStatement(now, now.Add(time.Minute), []string{"simbank"}, 64)
	tx := f.db.Begin()
	defer tx.Rollback() // EXPLAIN ANALYZE runs the update: keep the rows due
	var plan string
	if err := tx.Raw("EXPLAIN (ANALYZE, FORMAT JSON) "+query, args...).Row().Scan(&plan); err != nil {
		t.Fatal(err)
	}
	var doc []struct{ Plan planNode }
	if err := json.Unmarshal([]byte(plan), &doc); err != nil || len(doc) != 1 {
		t.Fatalf("plan %q: %v", plan, err)
	}
	limits := 0
	doc[0].Plan.walk(func(n planNode) {
		if n.NodeType != "Limit" {
			return
		}
		limits++
		if n.ActualLoops != 1 || n.ActualRows != 64 {
			t.Errorf("the claim's choice ran %d times for %d rows, want once for 64:\n%s", n.ActualLoops, n.ActualRows, plan)
		}
	})
	if limits != 1 {
		t.Fatalf("%d limited subqueries in the claim's plan, want 1:\n%s", limits, plan)
	}
}

// planNode is the part of a node of EXPLAIN (FORMAT JSON) the test reads.
type planNode struct {
	NodeType    string     `json:"Node Type"`
	ActualLoops int        `json:"Actual Loops"`
	ActualRows  int        `json:"Actual Rows"`
	Plans       []planNode `json:"Plans"`
}

func (n planNode) walk(visit func(planNode)) {
	visit(n)
	for _, c := range n.Plans {
		c.walk(visit)
	}
}

// The sweeps' reads use their partial indexes in a generic plan, which
// pgx's prepared statements get after a few executions: with the statuses
// bound, such a plan scanned every payout ever made on each sweep (the
// outside load driver saw 4.4 million tuples read by 522 scans in a minute).
func TestSweepReadsUseTheirIndexesInAGenericPlan(t *testing.T) {
	t.Parallel()
	f, _, _ := batchFixture(t)
	if database.DialectOfDB(f.db) != database.Postgres {
		t.Skip("PostgreSQL's plans")
	}
	for range 300 {
		f.stored(models.StatusFailed, models.Rupiah(10_000))
	}
	f.stored(models.StatusVerified, models.Rupiah(10_000))
	if err := f.db.Exec("ANALYZE disbursements").Error; err != nil {
		t.Fatal(err)
	}
	for name, cond := range map[string]string{"lockRunOut": lockRunOut, "openCheckDue": openCheckDue, "returnCheckDue": returnCheckDue} {
		err := f.db.Connection(func(conn *gorm.DB) error {
			if err := conn.Exec("SET plan_cache_mode = force_generic_plan").Error; err != nil {
				return err
			}
			defer conn.Exec("RESET plan_cache_mode; DEALLOCATE sweep_read")
			stmt := "PREPARE sweep_read(timestamptz) AS SELECT id FROM disbursements WHERE " +
				strings.Replace(cond, "?", "$1", 1) + " ORDER BY next_check_at LIMIT 100"
			if err := conn.Exec(stmt).Error; err != nil {
				return err
			}
			var lines []string
			if err := conn.Raw("EXPLAIN EXECUTE sweep_read(now())").Scan(&lines).Error; err != nil {
				return err
			}
			if plan := strings.Join(lines, "\n"); strings.Contains(plan, "Seq Scan") {
				t.Errorf("%s: the generic plan scans the table:\n%s", name, plan)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
}
