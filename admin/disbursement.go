package admin

import (
	"context"
	"flag"
	"os"
	"os/user"

	"github.com/google/uuid"

	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/payouts"
	"github.com/payoutd/payoutd/vendors"
)

// operator names who runs a command, for the disbursement's audit trail.
func operator() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return "operator " + u.Username
	}
	if name := os.Getenv("USER"); name != "" {
		return "operator " + name
	}
	return "an operator"
}

func runDisbursementApprove(ctx context.Context, d Deps, fs *flag.FlagSet, args []string) (any, error) {
	return disbursementCommand(ctx, d, fs, args, d.payouts().Approve)
}

func runDisbursementCancel(ctx context.Context, d Deps, fs *flag.FlagSet, args []string) (any, error) {
	return disbursementCommand(ctx, d, fs, args, d.payouts().Cancel)
}

func disbursementCommand(ctx context.Context, d Deps, fs *flag.FlagSet, args []string,
	act func(context.Context, uuid.UUID, string) (*models.Disbursement, error)) (any, error) {
	raw := fs.String("id", "", "")
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	id, err := requireID("id", *raw)
	if err != nil {
		return nil, err
	}
	done, err := act(ctx, id, operator())
	if err != nil {
		return nil, err
	}
	return payouts.RecordView(done), nil
}

func runSandboxComplete(ctx context.Context, d Deps, fs *flag.FlagSet, args []string) (any, error) {
	raw := fs.String("id", "", "")
	status := fs.String("status", "", "")
	reason := fs.String("reason", "", "")
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	id, err := requireID("id", *raw)
	if err != nil {
		return nil, err
	}
	if *status != string(vendors.PayoutSuccess) && *status != string(vendors.PayoutFailed) {
		return nil, usageError{"--status must be SUCCESS or FAILED"}
	}
	done, err := d.payouts().CompleteSandbox(ctx, id, vendors.PayoutStatus(*status), *reason)
	if err != nil {
		return nil, err
	}
	return payouts.RecordView(done), nil
}
