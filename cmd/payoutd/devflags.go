package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

const devUsage = `usage: payoutd dev [--vendors=LIST]

Runs the API and the worker in one process on embedded backends (an in-memory
Redis, a SQLite file) with a demo client whose credentials it prints.
Development only: nothing here moves real money.

flags:
  --vendors LIST   comma-separated rails the demo client gets a wallet on
                   (default: sandbox):
                     sandbox           simbank and simwallet, in this process
                     simulated-xendit  a Xendit Payouts v2 simulator on its own
                                       loopback port: the service speaks Xendit's
                                       protocol to it over HTTP, and its webhooks
                                       come back to /vendor-callbacks/xendit
                     simulated-snap    a SNAP BI simulator of BCA (vendor
                                       snap:bca) on its own loopback port, with
                                       RSA keys made for the run: quotes name
                                       the holder from its account inquiry, and
                                       its signed notifications come back to
                                       /vendor-callbacks/snap/bca
                   The first rail listed holds the demo's default wallet.

environment: HTTP_ADDR, DEV_DATA_DIR, LOG_LEVEL, SANDBOX_COMPLETE_AFTER and the
rest of the configuration of README.md.
`

// devOptions are the flags of payoutd dev.
type devOptions struct {
	// rails are the --vendors values, in the order given, without repeats.
	rails []devRail
}

// errUsage marks an error that is the caller's mistake (exit 2).
var errUsage = errors.New("usage")

// parseDevArgs reads payoutd dev's flags; flag.ErrHelp for -h/--help.
func parseDevArgs(args []string) (devOptions, error) {
	fs := flag.NewFlagSet("payoutd dev", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // runDevCommand prints the usage itself
	vendorsFlag := fs.String("vendors", "sandbox", "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return devOptions{}, err
		}
		return devOptions{}, fmt.Errorf("%w: %v", errUsage, err)
	}
	if fs.NArg() > 0 {
		return devOptions{}, fmt.Errorf("%w: unexpected arguments %q", errUsage, fs.Args())
	}
	rails, err := parseDevRails(*vendorsFlag)
	if err != nil {
		return devOptions{}, fmt.Errorf("%w: %v", errUsage, err)
	}
	return devOptions{rails: rails}, nil
}

// parseDevRails reads a --vendors list: known names, at least one, each
// once.
func parseDevRails(list string) ([]devRail, error) {
	var rails []devRail
	seen := map[string]bool{}
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		r, ok := devRailNamed(name)
		switch {
		case name == "":
			return nil, fmt.Errorf("--vendors=%q: an empty name; want a comma-separated list of %s", list, devRailNames())
		case !ok:
			return nil, fmt.Errorf("--vendors: unknown rail %q; want a comma-separated list of %s", name, devRailNames())
		case seen[name]:
			return nil, fmt.Errorf("--vendors: %q is listed twice", name)
		}
		seen[name] = true
		rails = append(rails, r)
	}
	return rails, nil
}

// runDevCommand is `payoutd dev [flags]`: usage on -h/--help (exit 0), a
// usage error (exit 2), or dev mode until ctx ends.
func runDevCommand(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	opts, err := parseDevArgs(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(stdout, devUsage)
		return 0
	case err != nil:
		fmt.Fprintf(stderr, "payoutd dev: %s; see payoutd dev --help\n", strings.TrimPrefix(err.Error(), errUsage.Error()+": "))
		return 2
	}
	if err := runDev(ctx, opts, stdout, stderr, getenv); err != nil {
		fmt.Fprintf(stderr, "payoutd dev: %v\n", err)
		return 1
	}
	return 0
}
