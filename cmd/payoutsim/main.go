// Command payoutsim runs the deterministic simulation of the payout
// lifecycle (package internal/sim) over a range of seeds, or replays one
// seed's history: make sim.
//
//	payoutsim -seeds 200                  seeds 1 to 200
//	payoutsim -from 1000 -seeds 100000    an overnight run
//	payoutsim -duration 2m                as many seeds as fit in two minutes
//	payoutsim -seed 42 -v                 one seed, its whole history printed
//
// A failing seed is shrunk (its faults turned off one kind at a time while
// it still fails) and its history written to a file; the exit status is 1.
package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/payoutd/payoutd/internal/sim"
)

func main() {
	from := flag.Uint64("from", 1, "first seed")
	seeds := flag.Int("seeds", 100, "how many seeds, from -from on")
	one := flag.Uint64("seed", 0, "run this one seed only (with -v, print its history)")
	steps := flag.Int("steps", 300, "steps with faults per seed, before the liveness phase")
	duration := flag.Duration("duration", 0, "stop starting seeds after this long (0: run them all)")
	every := flag.Int("determinism-every", 10, "run every n-th seed twice and compare the histories (0: never)")
	verbose := flag.Bool("v", false, "print every history")
	out := flag.String("out", "", "directory for a failing seed's history (default: the temporary directory)")
	jobs := flag.Int("jobs", 1, "processes to share the seeds among (each its own runner: runs share process-wide state)")
	shard := flag.Int("shard", 0, "this process runs the seeds whose index modulo -jobs is this (set by -jobs)")
	flag.Parse()
	if *jobs > 1 && *shard == 0 && !isShard() {
		os.Exit(runShards(*jobs))
	}

	// The service logs as it would in production; the history says what
	// matters, in simulated time.
	slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))

	first, count := *from, *seeds
	if *one != 0 {
		first, count = *one, 1
	}
	start := time.Now()
	ran, stepsRun := 0, 0
	lastReport := start
	stride := max(*jobs, 1)
	for i := *shard; i < count; i += stride {
		if *duration > 0 && time.Since(start) > *duration {
			break
		}
		seed := first + uint64(i)
		res := sim.Run(seed, *steps)
		ran++
		stepsRun += res.Steps
		if time.Since(lastReport) > 30*time.Second {
			lastReport = time.Now()
			fmt.Fprintf(os.Stderr, "sim: %d seeds held so far (up to %d), %s\n", ran, seed, time.Since(start).Round(time.Second))
		}
		if *verbose {
			fmt.Println(strings.Join(res.History, "\n"))
		}
		if res.Err != nil {
			fail(res, *steps, *out)
		}
		if *every > 0 && i%*every == 0 {
			again := sim.Run(seed, *steps)
			if again.Hash() != res.Hash() {
				fmt.Printf("seed %d: NOT DETERMINISTIC: history %s, then %s\n", seed, res.Hash(), again.Hash())
				fmt.Println(firstDifference(res.History, again.History))
				os.Exit(1)
			}
		}
	}
	if stride > 1 {
		fmt.Printf("shard %d: %d seeds, %d steps, all invariants held, %s\n", *shard, ran, stepsRun, time.Since(start).Round(time.Second))
		return
	}
	fmt.Printf("sim: %d seeds (%d to %d), %d steps, all invariants held, %s\n", ran, first, first+uint64(ran)-1, stepsRun, time.Since(start).Round(time.Second))
}

// isShard reports whether this process was started by runShards.
func isShard() bool { return os.Getenv("PAYOUTSIM_SHARD") != "" }

// runShards runs this command once per shard with the same flags, and
// waits for all: the first to fail stops the others. It returns the exit
// status.
func runShards(jobs int) int {
	start := time.Now()
	self, err := os.Executable()
	if err != nil {
		fmt.Println(err)
		return 2
	}
	procs := make([]*exec.Cmd, jobs)
	done := make(chan error, jobs)
	for j := range jobs {
		args := append(slices.Clone(os.Args[1:]), fmt.Sprintf("-shard=%d", j))
		cmd := exec.Command(self, args...)
		cmd.Env = append(os.Environ(), "PAYOUTSIM_SHARD=1")
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if err := cmd.Start(); err != nil {
			fmt.Println(err)
			return 2
		}
		procs[j] = cmd
		go func() { done <- cmd.Wait() }()
	}
	status := 0
	for range jobs {
		if err := <-done; err != nil && status == 0 {
			status = 1
			for _, p := range procs {
				_ = p.Process.Kill()
			}
		}
	}
	if status == 0 {
		fmt.Printf("sim: every shard held, %s\n", time.Since(start).Round(time.Second))
	}
	return status
}

// fail shrinks a failing seed, writes its shortest history and exits.
func fail(res *sim.Result, steps int, dir string) {
	fmt.Printf("seed %d FAILED at step %d: %v\n", res.Seed, res.Steps, res.Err)
	short := sim.Shrink(res)
	if dir == "" {
		dir = os.TempDir()
	}
	path := fmt.Sprintf("%s/payoutsim-%d.history", strings.TrimRight(dir, "/"), res.Seed)
	_ = os.WriteFile(path, []byte(strings.Join(short.History, "\n")+"\n"), 0o644)
	tail := short.History
	if len(tail) > 60 {
		tail = tail[len(tail)-60:]
	}
	fmt.Printf("shortest failing run of seed %d: %d steps, %v\nconfig: %+v\n…\n%s\n", short.Seed, short.Steps, short.Err, short.Config, strings.Join(tail, "\n"))
	fmt.Printf("whole history: %s\nreplay: go run ./cmd/payoutsim -seed %d -steps %d -v\n", path, res.Seed, steps)
	os.Exit(1)
}

// firstDifference shows where two histories of one seed part.
func firstDifference(a, b []string) string {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return fmt.Sprintf("line %d:\n  %s\n  %s", i+1, a[i], b[i])
		}
	}
	return fmt.Sprintf("one history is a prefix of the other (%d and %d lines)", len(a), len(b))
}
