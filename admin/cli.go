package admin

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/payoutd/payoutd/ledger"
	"github.com/payoutd/payoutd/models"
)

// ExitInvariant is the exit status of a reconcile that found a problem;
// other failures exit 1, usage errors 2.
const ExitInvariant = 3

// usageError marks a mistake in the command line (exit 2).
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// failedResult is a result printed in full although the command failed
// (a redelivery the receiver refused): commandFailure says why, or is empty.
type failedResult interface{ commandFailure() string }

// command is one `payoutd admin <group> <verb>`.
type command struct {
	name string
	help string
	run  func(ctx context.Context, d Deps, fs *flag.FlagSet, args []string) (any, error)
}

var commands = []command{
	{"client create", "--name NAME [--kind merchant|holding] [--allowed-ips CIDR,...] [--payout-webhook-url URL] [--payment-webhook-url URL] [--no-signing-secret]", runClientCreate},
	{"client rotate-credentials", "--client ID", runClientRotate},
	{"client update", "--client ID [--allowed-ips CIDR,...] [--payout-webhook-url URL] [--payment-webhook-url URL] [--withdrawals active|suspended] [--review-threshold AMOUNT|off] [--bifast-fee AMOUNT] [--rtol-fee AMOUNT] [--bifast-min-net AMOUNT] [--rtol-min-net AMOUNT] [--payment-fee-bps N] [--refund-fee-on-return true|false] [--require-signature-v2[=false]] [--write-rate-limit N|default] [--read-rate-limit N|default]", runClientUpdate},
	{"client show", "--client ID", runClientShow},
	{"wallet create", "--client ID --name NAME --vendor simbank|simwallet|xendit|snap:<bank> (xendit: with XENDIT_SECRET_KEY; snap:<bank>: with that bank in SNAP_BANKS) [--provisioning] [--default]", runWalletCreate},
	{"wallet activate", "--wallet ID", runWalletActivate},
	{"wallet adjust", "--wallet ID --amount SIGNED_DECIMAL --memo TEXT", runWalletAdjust},
	{"disbursement approve", "--id ID", runDisbursementApprove},
	{"disbursement cancel", "--id ID", runDisbursementCancel},
	{"disbursement list", "[--status STATUS] [--client ID] [--limit N (1-500, 50)] [--starting-after CURSOR]", runDisbursementList},
	{"disbursement late-results", "[--all]", runLateResults},
	{"disbursement resolve-late-result", "--id N --note TEXT", runResolveLateResult},
	{"sandbox complete", "--id ID --status SUCCESS|FAILED [--reason TEXT]", runSandboxComplete},
	{"payment simulate", "--id ID --status SUCCESS|FAILED", runPaymentSimulate},
	{"payment show", "--id ID", runPaymentShow},
	{"payment list", "[--status STATUS] [--client ID] [--limit N (1-500, 50)] [--starting-after CURSOR]", runPaymentList},
	{"payment settle", "--id ID", runPaymentSettle},
	{"webhook list", "--client ID [--limit N]", runWebhookList},
	{"webhook redeliver", "--event ID", runWebhookRedeliver},
	{"secrets rotate-key", "(with SECRETS_KEY the new key and SECRETS_KEY_PREVIOUS the old one)", runSecretsRotateKey},
	{"reconcile", "", runReconcile},
	// Runs through RunRailCheck, on the environment alone (run is nil).
	{"rail check", railCheckHelp, nil},
}

// Usage lists the commands.
func Usage() string {
	var b strings.Builder
	b.WriteString("usage: payoutd admin <command> [flags]\n\ncommands:\n")
	for _, c := range commands {
		fmt.Fprintf(&b, "  %s %s\n", c.name, c.help)
	}
	return b.String()
}

// Run executes one admin command given its arguments (after "admin") and
// returns the process exit status.
func Run(ctx context.Context, d Deps, args []string, stdout, stderr io.Writer) int {
	cmd, rest, ok := findCommand(args)
	if !ok {
		WriteError(stderr, fmt.Sprintf("unknown admin command %q", strings.Join(args, " ")))
		fmt.Fprint(stderr, Usage())
		return 2
	}
	if cmd.run == nil {
		WriteError(stderr, fmt.Sprintf("payoutd admin %s runs before any configuration is read (RunRailCheck), not through Run", cmd.name))
		return 2
	}
	return execute(cmd, stdout, stderr, func() (any, error) {
		fs := flag.NewFlagSet("payoutd admin "+cmd.name, flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		return cmd.run(ctx, d, fs, rest)
	})
}

// execute runs one command through call and prints its outcome by the
// CLI's contract; it returns the exit status.
func execute(cmd command, stdout, stderr io.Writer, call func() (any, error)) int {
	result, err := call()
	if err != nil {
		msg, inDatabase := operatorMessage(err)
		WriteError(stderr, msg)
		if inDatabase {
			logDatabaseFailure(stderr, cmd.name, err)
		}
		var u usageError
		if errors.As(err, &u) {
			fmt.Fprintf(stderr, "usage: payoutd admin %s %s\n", cmd.name, cmd.help)
			return 2
		}
		return 1
	}
	enc := json.NewEncoder(stdout)
	if err := enc.Encode(result); err != nil {
		WriteError(stderr, err.Error())
		return 1
	}
	if report, ok := result.(*ledger.Report); ok && !report.OK {
		return ExitInvariant
	}
	if f, ok := result.(failedResult); ok && f.commandFailure() != "" {
		WriteError(stderr, f.commandFailure())
		return 1
	}
	return 0
}

func findCommand(args []string) (command, []string, bool) {
	for _, c := range commands {
		words := strings.Fields(c.name)
		if len(args) >= len(words) && strings.Join(args[:len(words)], " ") == c.name {
			return c, args[len(words):], true
		}
	}
	return command{}, nil, false
}

// WriteError prints {"error": msg} as one line, the CLI's error contract.
func WriteError(w io.Writer, msg string) {
	b, _ := json.Marshal(map[string]string{"error": msg})
	fmt.Fprintln(w, string(b))
}

// parse parses flags and refuses stray arguments.
func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return usageError{err.Error()}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
	}
	return nil
}

// requireGiven refuses, as a usage error (exit 2), a command line without
// the flag name: a missing required flag is a mistake in the command line
// like a missing --client, whatever the command does with the value.
func requireGiven(fs *flag.FlagSet, name, msg string) error {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	if !given {
		return usageError{msg}
	}
	return nil
}

func requireID(flagName, raw string) (uuid.UUID, error) {
	if raw == "" {
		return uuid.Nil, usageError{"--" + flagName + " is required"}
	}
	id, err := uuid.Parse(raw)
	if err != nil {
		return uuid.Nil, usageError{"--" + flagName + " must be a UUID"}
	}
	return id, nil
}

func runClientCreate(ctx context.Context, d Deps, fs *flag.FlagSet, args []string) (any, error) {
	var o ClientOptions
	var kind string
	fs.StringVar(&o.Name, "name", "", "")
	fs.StringVar(&kind, "kind", string(models.KindMerchant), "")
	fs.StringVar(&o.AllowedIPs, "allowed-ips", "", "")
	fs.StringVar(&o.PayoutWebhookURL, "payout-webhook-url", "", "")
	fs.StringVar(&o.PaymentWebhookURL, "payment-webhook-url", "", "")
	fs.BoolVar(&o.NoSigningSecret, "no-signing-secret", false, "")
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	if err := requireGiven(fs, "name", "--name is required"); err != nil {
		return nil, err
	}
	o.Kind = models.ClientKind(kind)
	return CreateClient(ctx, d, o)
}

func runClientRotate(ctx context.Context, d Deps, fs *flag.FlagSet, args []string) (any, error) {
	raw := fs.String("client", "", "")
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	id, err := requireID("client", *raw)
	if err != nil {
		return nil, err
	}
	return RotateCredentials(ctx, d, id)
}

func runClientShow(ctx context.Context, d Deps, fs *flag.FlagSet, args []string) (any, error) {
	raw := fs.String("client", "", "")
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	id, err := requireID("client", *raw)
	if err != nil {
		return nil, err
	}
	c, err := d.store().FindClient(ctx, id)
	if err != nil {
		return nil, err
	}
	return toClientRecord(c), nil
}

func runWalletCreate(ctx context.Context, d Deps, fs *flag.FlagSet, args []string) (any, error) {
	var o WalletOptions
	rawClient := fs.String("client", "", "")
	fs.StringVar(&o.Name, "name", "", "")
	fs.StringVar(&o.Vendor, "vendor", "", "")
	fs.BoolVar(&o.Provisioning, "provisioning", false, "")
	fs.BoolVar(&o.Default, "default", false, "")
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	id, err := requireID("client", *rawClient)
	if err != nil {
		return nil, err
	}
	for _, name := range []string{"name", "vendor"} {
		if err := requireGiven(fs, name, "--"+name+" is required"); err != nil {
			return nil, err
		}
	}
	o.ClientID = id
	return CreateWallet(ctx, d, o)
}

func runWalletActivate(ctx context.Context, d Deps, fs *flag.FlagSet, args []string) (any, error) {
	raw := fs.String("wallet", "", "")
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	id, err := requireID("wallet", *raw)
	if err != nil {
		return nil, err
	}
	w, err := d.store().ActivateWallet(ctx, id)
	if err != nil {
		return nil, err
	}
	return map[string]string{"wallet_id": w.ID.String(), "name": w.Name, "vendor": w.Vendor, "state": string(w.State)}, nil
}

func runWalletAdjust(ctx context.Context, d Deps, fs *flag.FlagSet, args []string) (any, error) {
	raw := fs.String("wallet", "", "")
	amount := fs.String("amount", "", "")
	memo := fs.String("memo", "", "why the balance changes; the merchant sees it as the description of the line in its wallet statement")
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	id, err := requireID("wallet", *raw)
	if err != nil {
		return nil, err
	}
	if *amount == "" {
		return nil, usageError{"--amount is required"}
	}
	if err := requireGiven(fs, "memo", "--memo is required: say why the balance changes"); err != nil {
		return nil, err
	}
	return AdjustWallet(ctx, d, id, *amount, *memo)
}

func runReconcile(ctx context.Context, d Deps, fs *flag.FlagSet, args []string) (any, error) {
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	report, err := ledger.Reconcile(ctx, d.DB, d.now())
	if err != nil {
		return nil, err
	}
	return report, checkSealedValues(ctx, d, report)
}

// helpIndex is where args ask for help, -1 if they do not: -h, -help or
// --help anywhere, or the word help among the command's words (before any
// flag, so that a flag's value "help" is only a value).
func helpIndex(args []string) int {
	words := true
	for i, arg := range args {
		switch {
		case arg == "-h" || arg == "-help" || arg == "--help":
			return i
		case strings.HasPrefix(arg, "-"):
			words = false
		case words && arg == "help":
			return i
		}
	}
	return -1
}

// Help answers `payoutd admin [words] --help` before anything is
// configured: the usage of the command the words name, or the list of a
// group's commands (`admin client --help`), or every command. ok is false
// when args ask for no help.
func Help(args []string) (text string, ok bool) {
	i := helpIndex(args)
	if len(args) > 0 && i < 0 {
		return "", false
	}
	if i < 0 {
		i = 0
	}
	words := args[:i]
	if cmd, _, found := findCommand(words); found {
		return fmt.Sprintf("usage: payoutd admin %s %s\n", cmd.name, cmd.help), true
	}
	var b strings.Builder
	for _, c := range commands {
		if len(words) == 0 || strings.HasPrefix(c.name, strings.Join(words, " ")+" ") {
			fmt.Fprintf(&b, "  %s %s\n", c.name, c.help)
		}
	}
	if b.Len() == 0 || len(words) == 0 {
		return Usage(), true
	}
	return fmt.Sprintf("usage: payoutd admin %s <command> [flags]\n\ncommands:\n%s", strings.Join(words, " "), b.String()), true
}

// Known reports whether args start with an admin command, so that a
// mistyped one is refused (exit 2) before any configuration is read.
func Known(args []string) bool {
	_, _, ok := findCommand(args)
	return ok
}

// Names are the admin commands ("client create", ...), for the test that
// runs --help on every one.
func Names() []string {
	names := make([]string, len(commands))
	for i, c := range commands {
		names[i] = c.name
	}
	return names
}

// Groups are the first words of the admin commands ("client", "wallet",
// ...), each once.
func Groups() []string {
	var groups []string
	for _, c := range commands {
		if g, _, _ := strings.Cut(c.name, " "); !slices.Contains(groups, g) {
			groups = append(groups, g)
		}
	}
	return groups
}
