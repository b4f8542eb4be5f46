package admin

import (
	"context"
	"flag"
	"os"
	"os/user"
	"strconv"
	"strings"

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
	svc, err := d.payouts()
	if err != nil {
		return nil, err
	}
	return disbursementCommand(ctx, fs, args, svc.Approve)
}

func runDisbursementCancel(ctx context.Context, d Deps, fs *flag.FlagSet, args []string) (any, error) {
	svc, err := d.payouts()
	if err != nil {
		return nil, err
	}
	return disbursementCommand(ctx, fs, args, svc.Cancel)
}

func disbursementCommand(ctx context.Context, fs *flag.FlagSet, args []string,
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
	svc, err := d.payouts()
	if err != nil {
		return nil, err
	}
	done, err := svc.CompleteSandbox(ctx, id, vendors.PayoutStatus(*status), *reason)
	if err != nil {
		return nil, err
	}
	return payouts.RecordView(done), nil
}

// LateResultRecord is how operator commands show a vendor result that
// contradicted a final disbursement. Times are RFC 3339 UTC.
type LateResultRecord struct {
	ID              int64   `json:"id"`
	DisbursementID  string  `json:"disbursement_id"`
	Vendor          string  `json:"vendor"`
	VendorReference string  `json:"vendor_reference"`
	StoredStatus    string  `json:"stored_status"`
	ReportedStatus  string  `json:"reported_status"`
	Reason          string  `json:"reason"`
	Source          string  `json:"source"`
	FirstSeenAt     string  `json:"first_seen_at"`
	LastSeenAt      string  `json:"last_seen_at"`
	SeenCount       int     `json:"seen_count"`
	ResolvedAt      *string `json:"resolved_at"`
	ResolvedBy      *string `json:"resolved_by"`
	Note            *string `json:"note"`
}

func toLateResultRecord(r *models.DisbursementLateResult) LateResultRecord {
	return LateResultRecord{
		ID: r.ID, DisbursementID: r.DisbursementID.String(), Vendor: r.Vendor, VendorReference: r.VendorReference,
		StoredStatus: string(r.StoredStatus), ReportedStatus: r.ReportedStatus, Reason: r.Reason, Source: r.Source,
		FirstSeenAt: models.FormatTime(r.FirstSeenAt), LastSeenAt: models.FormatTime(r.LastSeenAt), SeenCount: r.SeenCount,
		ResolvedAt: models.FormatTimePtr(r.ResolvedAt), ResolvedBy: r.ResolvedBy, Note: r.Note,
	}
}

// runLateResults lists the unresolved late vendor results (all with --all)
// as {"late_results": [...], "total_count": N}.
func runLateResults(ctx context.Context, d Deps, fs *flag.FlagSet, args []string) (any, error) {
	all := fs.Bool("all", false, "")
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	svc, err := d.payouts()
	if err != nil {
		return nil, err
	}
	results, err := svc.LateResults(ctx, *all)
	if err != nil {
		return nil, err
	}
	out := make([]LateResultRecord, len(results))
	for i := range results {
		out[i] = toLateResultRecord(&results[i])
	}
	return map[string]any{"late_results": out, "total_count": len(out)}, nil
}

// runResolveLateResult closes one late vendor result with a note and
// prints it.
func runResolveLateResult(ctx context.Context, d Deps, fs *flag.FlagSet, args []string) (any, error) {
	raw := fs.String("id", "", "")
	note := fs.String("note", "", "")
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	id, err := strconv.ParseInt(*raw, 10, 64)
	if err != nil || id <= 0 {
		return nil, usageError{"--id must be the number of a late result (payoutd admin disbursement late-results)"}
	}
	if strings.TrimSpace(*note) == "" {
		return nil, usageError{"--note is required: say what was found with the vendor and what was done"}
	}
	svc, err := d.payouts()
	if err != nil {
		return nil, err
	}
	r, err := svc.ResolveLateResult(ctx, id, operator(), strings.TrimSpace(*note))
	if err != nil {
		return nil, err
	}
	return toLateResultRecord(r), nil
}
