package client_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"strconv"
	"testing"
	"time"

	"github.com/payoutd/payoutd/client"
)

// The statement through the SDK against a running service: after a paid
// payout, the iterator reads every line newest first (funding, lock,
// debit, fee), the newest line's figures are WalletBalance's, and the CSV
// export holds the same lines oldest first.
func TestStatementThroughTheSDK(t *testing.T) {
	live := startService(t)
	c, err := client.New(live.url, live.apiKey, live.signingSecret)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	d, err := c.CreateDisbursement(ctx, client.CreateDisbursementRequest{ClientWalletID: live.wallet, Amount: "100000",
		BankCode: "bca", AccountNo: "1234567890", TransferType: client.BIFAST}, client.NewIdempotencyKey())
	if err != nil {
		t.Fatal(err)
	}
	if final := pollUntilFinal(t, c, d.ID); final.Status != client.StatusSuccess {
		t.Fatalf("payout ended %s", final.Status)
	}

	var lines []client.StatementLine
	for l, err := range c.WalletTransactions(ctx, live.wallet, client.ListParams{Limit: 2}) {
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, l)
	}
	var kinds []client.StatementKind
	for _, l := range lines {
		kinds = append(kinds, l.Kind)
	}
	want := []client.StatementKind{client.StatementFee, client.StatementPayoutDebited, client.StatementPayoutLocked, client.StatementAdjustment}
	if len(kinds) != len(want) {
		t.Fatalf("kinds %v, want %v", kinds, want)
	}
	for i := range want {
		if kinds[i] != want[i] || lines[i].Seq != int64(len(want)-i) {
			t.Fatalf("lines %+v, want kinds %v numbered down from %d", lines, want, len(want))
		}
	}
	if lines[0].DisbursementID == nil || *lines[0].DisbursementID != d.ID || lines[0].Amount != "-2500.0000" {
		t.Errorf("fee line %+v", lines[0])
	}
	bal, err := c.WalletBalance(ctx, live.wallet)
	if err != nil {
		t.Fatal(err)
	}
	if lines[0].BalanceAfter != bal.Balance || lines[0].AvailableAfter != bal.Available || lines[0].LockedAfter != bal.Locked {
		t.Errorf("newest line %+v, balance %+v", lines[0], bal)
	}

	var out bytes.Buffer
	if err := c.ExportWalletStatement(ctx, live.wallet, time.Time{}, time.Time{}, &out); err != nil {
		t.Fatal(err)
	}
	records, err := csv.NewReader(&out).ReadAll()
	if err != nil || len(records) != len(lines)+1 {
		t.Fatalf("export %v, %v", records, err)
	}
	for i, rec := range records[1:] {
		l := lines[len(lines)-1-i]
		if rec[0] != strconv.FormatInt(l.Seq, 10) || rec[2] != string(l.Kind) || rec[3] != string(l.Amount) || rec[4] != string(l.BalanceAfter) {
			t.Errorf("CSV line %v, JSON line %+v", rec, l)
		}
	}
	if err := c.ExportWalletStatement(ctx, "6f1c2a9e-8d4b-4c3e-9a7f-1b2c3d4e5f60", time.Time{}, time.Time{}, &out); !client.IsNotFound(err) {
		t.Errorf("export of an unknown wallet: %v", err)
	}
}
