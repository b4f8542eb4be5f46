package snap_test

import (
	"context"
	"testing"

	"github.com/payoutd/payoutd/internal/database"
	"github.com/payoutd/payoutd/internal/testenv"
	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors/snap"
)

// The database store keeps what the first submit sent, records the bank's
// referenceNo once known, separates banks, and is found again by another
// handle on the same database (another process, or this one restarted).
func TestDBStore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, url := testenv.DBWithURL(t)
	s := snap.NewDBStore(db, "BCA")
	if _, ok, err := s.Get(ctx, "pd-1"); ok || err != nil {
		t.Fatalf("empty store: ok %v, %v", ok, err)
	}
	first := snap.Transfer{Reference: "pd-1", ExternalID: snap.TransferExternalID("pd-1"), Date: "2026-11-22T17:00:00+07:00"}
	if err := s.Put(ctx, first); err != nil {
		t.Fatal(err)
	}
	// A second submit on another day stores another date: the first stays.
	again := first
	again.Date = "2026-11-23T09:00:00+07:00"
	if err := s.Put(ctx, again); err != nil {
		t.Fatal(err)
	}
	withRef := first
	withRef.ReferenceNo = "SIM000000000042"
	if err := s.Put(ctx, withRef); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, first); err != nil { // without referenceNo: kept
		t.Fatal(err)
	}
	if err := s.Put(ctx, snap.Transfer{Reference: "pd-1"}); err == nil {
		t.Error("a transfer without X-EXTERNAL-ID was stored")
	}

	other, err := database.Open(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if sqlDB, err := other.DB(); err == nil {
			sqlDB.Close()
		}
	})
	got, ok, err := snap.NewDBStore(other, "bca").Get(ctx, "pd-1")
	if err != nil || !ok || got != withRef {
		t.Errorf("another handle reads %+v, %v, %v; want %+v", got, ok, err, withRef)
	}
	if _, ok, _ := snap.NewDBStore(db, "bri").Get(ctx, "pd-1"); ok {
		t.Error("bri sees bca's transfer")
	}
}

// Submit and Status through the database store: a second adapter (another
// process) asks the status of a transfer the first sent.
func TestDBStoreSharedByProcesses(t *testing.T) {
	t.Parallel()
	db := testenv.DB(t)
	e := newEnv(t, func(o *snap.Options) { o.Store = snap.NewDBStore(db, "bca") })
	if _, err := e.submit("pd-shared", "1234567890", models.BIFAST, models.Rupiah(10_000)); err != nil {
		t.Fatal(err)
	}
	stored, ok, err := snap.NewDBStore(db, "bca").Get(context.Background(), "pd-shared")
	if err != nil || !ok || stored.ReferenceNo == "" || stored.ExternalID != snap.TransferExternalID("pd-shared") {
		t.Fatalf("stored %+v, %v, %v", stored, ok, err)
	}
	second, err := snap.New(snap.Options{Bank: "bca", BaseURL: e.url, PartnerID: partnerID, ClientKey: clientKey, ClientSecret: clientSecret,
		ChannelID: "95221", PrivateKey: e.key, SourceAccountNo: sourceAcct, Now: e.clock.Now, Store: snap.NewDBStore(db, "bca")})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := second.Status(context.Background(), "pd-shared"); err != nil || res.Reference != "pd-shared" {
		t.Errorf("Status from another process = %+v, %v", res, err)
	}
}
