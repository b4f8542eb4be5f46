package models

import "testing"

// The lifecycle (docs/design.md, Disbursement lifecycle), written out
// independently of the table in disbursement.go: every pair of statuses is either here or refused.
func TestDisbursementMoves(t *testing.T) {
	t.Parallel()
	allowed := map[[2]DisbursementStatus]bool{
		{StatusPendingVerification, StatusVerified}:  true,
		{StatusPendingVerification, StatusCancelled}: true,
		{StatusPendingVerification, StatusExpired}:   true,
		{StatusVerified, StatusCancelled}:            true,
		{StatusVerified, StatusExpired}:              true,
		{StatusVerified, StatusRequested}:            true,
		{StatusVerified, StatusFailed}:               true,
		{StatusRequested, StatusSuccess}:             true,
		{StatusRequested, StatusFailed}:              true,
		// A bank returns a paid transfer, days later possibly.
		{StatusSuccess, StatusReturned}: true,
	}
	moves := 0
	for _, from := range DisbursementStatuses {
		for _, to := range DisbursementStatuses {
			want := allowed[[2]DisbursementStatus{from, to}]
			if got := from.CanMoveTo(to); got != want {
				t.Errorf("%s → %s allowed = %v, want %v", from, to, got, want)
			}
			if want {
				moves++
			}
		}
	}
	if moves != len(allowed) {
		t.Errorf("checked %d allowed moves, the lifecycle has %d", moves, len(allowed))
	}
}

func TestDisbursementCreatedAs(t *testing.T) {
	t.Parallel()
	for _, s := range DisbursementStatuses {
		want := s == StatusPendingVerification || s == StatusVerified
		if got := CanCreateAs(s); got != want {
			t.Errorf("CanCreateAs(%s) = %v, want %v", s, got, want)
		}
	}
	if CanCreateAs("BOGUS") || DisbursementStatus("BOGUS").CanMoveTo(StatusSuccess) || StatusVerified.CanMoveTo("BOGUS") {
		t.Error("an unknown status takes part in a move")
	}
}

func TestDisbursementTerminal(t *testing.T) {
	t.Parallel()
	terminal := map[DisbursementStatus]bool{StatusSuccess: true, StatusFailed: true, StatusExpired: true, StatusCancelled: true, StatusReturned: true}
	for _, s := range DisbursementStatuses {
		if s.Terminal() != terminal[s] {
			t.Errorf("%s.Terminal() = %v", s, s.Terminal())
		}
		if s.Terminal() {
			for _, to := range DisbursementStatuses {
				// The one move out of a terminal status: a return after SUCCESS.
				if s.CanMoveTo(to) && (s != StatusSuccess || to != StatusReturned) {
					t.Errorf("terminal %s may move to %s", s, to)
				}
			}
		}
	}
}

func TestParseTransferType(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"BIFAST", "RTOL"} {
		if got, err := ParseTransferType(ok); err != nil || string(got) != ok {
			t.Errorf("ParseTransferType(%q) = %q, %v", ok, got, err)
		}
	}
	for _, bad := range []string{"", "bifast", "Rtol", "SKN", " BIFAST", "BIFAST "} {
		if _, err := ParseTransferType(bad); err == nil {
			t.Errorf("ParseTransferType(%q) accepted", bad)
		}
	}
}
