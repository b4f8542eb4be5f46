package main

import (
	"context"
	"strings"
	"testing"

	"github.com/payoutd/payoutd/admin"
)

// Every command and admin subcommand answers --help and -h with its usage
// on stdout and exit 0, with no configuration at all and without starting
// anything; a mistake in the command line exits 2 with one line on stderr.
func TestEveryCommandAnswersHelp(t *testing.T) {
	t.Parallel()
	noEnv := func(string) string { return "" }
	commands := [][]string{{}, {"api"}, {"worker"}, {"migrate"}, {"dev"}, {"healthcheck"}, {"vendorsim"}, {"admin"}}
	for _, group := range admin.Groups() {
		commands = append(commands, []string{"admin", group})
	}
	for _, name := range admin.Names() {
		commands = append(commands, append([]string{"admin"}, strings.Fields(name)...))
	}
	for _, cmd := range commands {
		for _, flag := range []string{"--help", "-h"} {
			var stdout, stderr strings.Builder
			code := run(context.Background(), append(append([]string{}, cmd...), flag), &stdout, &stderr, noEnv)
			if code != 0 || !strings.Contains(stdout.String(), "usage: payoutd") || stderr.Len() != 0 {
				t.Errorf("payoutd %s %s: exit %d, stdout %q, stderr %q; want 0 and the usage on stdout",
					strings.Join(cmd, " "), flag, code, stdout.String(), stderr.String())
			}
		}
	}
}

func TestCommandLineMistakesExit2(t *testing.T) {
	t.Parallel()
	noEnv := func(string) string { return "" }
	for _, args := range [][]string{
		{"nonsense"}, {"api", "extra"}, {"worker", "--port=1"}, {"migrate", "up"}, {"healthcheck", "now"},
		{"vendorsim", "--bogus"}, {"dev", "--bogus"}, {"admin", "bogus"}, {"admin", "client", "frobnicate"},
	} {
		var stdout, stderr strings.Builder
		code := run(context.Background(), args, &stdout, &stderr, noEnv)
		first, _, _ := strings.Cut(stderr.String(), "\n")
		if code != 2 || first == "" {
			t.Errorf("payoutd %s: exit %d, stderr %q; want 2 and a message", strings.Join(args, " "), code, stderr.String())
		}
		if args[0] != "nonsense" && strings.Count(stderr.String(), "\n") != 1 {
			t.Errorf("payoutd %s: stderr %q; want one line", strings.Join(args, " "), stderr.String())
		}
	}
}
