package admin

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/payoutd/payoutd/internal/config"
	"github.com/payoutd/payoutd/internal/railcheck"
	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors"
)

// railCheckHelp is the usage of `payoutd admin rail check`.
const railCheckHelp = "--vendor xendit|snap:<bank> [--bank CODE --account NO] [--holder NAME] [--pay AMOUNT | --no-pay] [--wait 60s]" +
	" (checks the rail with the api's and worker's environment, no database: config, connect, auth, channels, inquiry," +
	" and in the provider's test mode a test payout of 10000 followed to its end; exit 1 when a step fails)"

// RailDeps are what `payoutd admin rail check` runs on: the environment of
// the api and the worker, and how they build their vendors from it
// (app.VendorRegistry). It needs no database, and reports a configuration
// the other commands would refuse to start with.
type RailDeps struct {
	Getenv  func(string) string
	Vendors func(config.Config) (vendors.Registry, error)
}

// IsRailCheck reports whether args (after "admin") are `rail check ...`,
// which runs through RunRailCheck rather than Run.
func IsRailCheck(args []string) bool {
	cmd, _, ok := findCommand(args)
	return ok && cmd.name == "rail check"
}

// RunRailCheck runs `payoutd admin rail check` (args after "admin") and
// returns the exit status: the report on stdout, exit 0 when no step
// failed, 1 with {"error"} on stderr when one did, 2 for a mistake in the
// command line.
func RunRailCheck(ctx context.Context, d RailDeps, args []string, stdout, stderr io.Writer) int {
	cmd, rest, ok := findCommand(args)
	if !ok || cmd.name != "rail check" {
		WriteError(stderr, fmt.Sprintf("not a rail check: %q", strings.Join(args, " ")))
		return 2
	}
	return execute(cmd, stdout, stderr, func() (any, error) {
		fs := flag.NewFlagSet("payoutd admin "+cmd.name, flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		return runRailCheck(ctx, d, fs, rest)
	})
}

// railCheckResult is the report, printed in full although a step failed.
type railCheckResult struct{ railcheck.Report }

func (r railCheckResult) commandFailure() string { return r.Failure() }

func runRailCheck(ctx context.Context, d RailDeps, fs *flag.FlagSet, args []string) (any, error) {
	o := railcheck.Options{Getenv: d.Getenv, Vendors: d.Vendors}
	vendor := fs.String("vendor", "", "")
	pay := fs.String("pay", "", "")
	fs.StringVar(&o.Bank, "bank", "", "")
	fs.StringVar(&o.Account, "account", "", "")
	fs.StringVar(&o.Holder, "holder", "", "")
	fs.BoolVar(&o.NoPay, "no-pay", false, "")
	fs.DurationVar(&o.Wait, "wait", railcheck.DefaultWait, "")
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	if err := requireGiven(fs, "vendor", "--vendor is required: xendit or snap:<bank>"); err != nil {
		return nil, err
	}
	var err error
	if o.Vendor, err = railcheck.ParseVendor(*vendor); err != nil {
		return nil, usageError{err.Error()}
	}
	if o.Wait <= 0 {
		return nil, usageError{"--wait must be a positive duration such as 60s"}
	}
	fs.Visit(func(f *flag.Flag) { o.Pay = o.Pay || f.Name == "pay" })
	if o.Pay {
		if o.NoPay {
			return nil, usageError{"--pay and --no-pay contradict each other"}
		}
		if o.Amount, err = models.ParsePositiveAmount(*pay); err != nil {
			return nil, usageError{"--pay " + err.Error()}
		}
	}
	return railCheckResult{railcheck.Run(ctx, o)}, nil
}
