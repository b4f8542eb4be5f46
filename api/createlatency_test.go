package api

import (
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/payoutd/payoutd/vendors/sandbox"
)

// The merchant's wait with the default configuration:
// 32 clients each create payouts one after another on a wallet of their
// own, DISBURSEMENT_SUBMIT_WAIT 5 s, the in-process sandbox answering at
// once and a real worker running; it prints the creates' p50, p99 and max
// (and the share answered still VERIFIED). A measurement, not a test: it
// runs only with PAYOUTD_CREATE_LATENCY set (to the creates per client,
// default 40), e.g.
//
//	PAYOUTD_CREATE_LATENCY=40 go test -run TestCreateLatencyWithSubmitWait -v ./api/
func TestCreateLatencyWithSubmitWait(t *testing.T) {
	perClient := latencyRun(t)
	const clients = 32
	e := workerSetup(t, payoutSetup{submitWait: 5 * time.Second, inlineSubmit: true, funds: "none"})
	wallets := make([]uuid.UUID, clients)
	for i := range wallets {
		wallets[i] = e.newWallet(e.m.id, fmt.Sprintf("W%02d", i), sandbox.SimBank, false)
		e.fund(wallets[i], "1000000000")
	}
	latencies := make([][]time.Duration, clients)
	verified := make([]int, clients)
	var wg sync.WaitGroup
	start := time.Now()
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perClient {
				body := payoutBody{wallet: wallets[c].String(), amount: "100000", bank: "bca", account: "1234567890", transferType: "BIFAST"}
				began := time.Now()
				r := e.create(fmt.Sprintf("lat-%d-%d", c, i), body)
				latencies[c] = append(latencies[c], time.Since(began))
				if r.status != http.StatusCreated {
					t.Errorf("create: %d %s", r.status, r.body)
					return
				}
				if r.disbursement(t).Status == "VERIFIED" {
					verified[c]++
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	all := slices.Concat(latencies...)
	slices.Sort(all)
	q := func(p float64) time.Duration { return all[min(len(all)-1, int(p*float64(len(all))))] }
	t.Logf("%d creates at %d clients in %s (%.0f/s): p50 %s, p99 %s, max %s; answered VERIFIED %d",
		len(all), clients, elapsed.Round(time.Millisecond), float64(len(all))/elapsed.Seconds(),
		q(0.50).Round(100*time.Microsecond), q(0.99).Round(100*time.Microsecond), all[len(all)-1].Round(100*time.Microsecond), sum(verified))
}

// latencyRun skips unless PAYOUTD_CREATE_LATENCY asks for the measurement
// and returns the creates per client it asks.
func latencyRun(t *testing.T) int {
	v := os.Getenv("PAYOUTD_CREATE_LATENCY")
	if v == "" {
		t.Skip("a measurement: set PAYOUTD_CREATE_LATENCY to run it")
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		n = 40
	}
	return n
}

func sum(xs []int) int {
	total := 0
	for _, x := range xs {
		total += x
	}
	return total
}
