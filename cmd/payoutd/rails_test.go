package main

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/payoutd/payoutd/vendors"
	"github.com/payoutd/payoutd/vendors/sandbox"
	"github.com/payoutd/payoutd/vendors/snap"
	"github.com/payoutd/payoutd/vendors/snap/snapsim"
	"github.com/payoutd/payoutd/vendors/vendorsim"
	"github.com/payoutd/payoutd/vendors/xendit"
	"github.com/payoutd/payoutd/vendors/xendit/xenditsim"
)

// rail is a payout vendor the fault tests run the stack on: how to start
// its simulator, the wallet's vendor name, the environment the `payoutd`
// processes need to reach it, and the simulator's hooks. A new vendor (the
// SNAP banks, `snap:<bank>`) is one more entry in rails.
type rail struct {
	name   string // in the subtest names: TestWorkerKilledMidBatch/xendit
	vendor string // the vendor of the stack's wallet
	// isSubmit tells a payout submit among the simulator's requests (the
	// stack can answer those late, to keep submits on the wire).
	isSubmit func(r *http.Request) bool
	// start builds the simulator; its handler is then served on a
	// loopback socket and connect is called with that socket's URL.
	start func(t *testing.T, o railOptions) railSim
}

// railOptions are what a rail's simulator is started with.
type railOptions struct {
	completeAfter time.Duration // an ordinary payout is final this late
	// callbackBase is the API's /vendor-callbacks; "": no callbacks.
	callbackBase string
	store        sandbox.Store // sandbox rail: its payouts; nil: its own
	db           *gorm.DB      // the stack's database (SNAP keeps its transfers there)
}

// railSim is a started simulator.
type railSim struct {
	handler http.Handler
	// run delivers callbacks until ctx ends.
	run func(ctx context.Context)
	// connect returns the vendors of the in-process API and service and
	// the environment of a `payoutd worker` process, for the simulator
	// served at url.
	connect func(t *testing.T, url string) (vendors.Registry, []string)
	// submits is how many times the vendor was asked to pay ref (every
	// create, idempotent replays included): 1 means paid once.
	submits func(ref string) (int, error)
	// statusCalls is how many status queries asked the vendor about ref
	// (nil: the rail does not count them).
	statusCalls func(ref string) int
	// complete makes ref final at the vendor (paid or failed), as the
	// bank would, so that its callback is sent.
	complete func(ref string, paid bool) error
}

var (
	sandboxRail = rail{name: "sandbox", vendor: sandbox.SimBank, isSubmit: pathEnds("/payouts"), start: startSandboxRail}
	xenditRail  = rail{name: "xendit", vendor: xendit.Name, isSubmit: pathEnds("/payouts"), start: startXenditRail}
	snapRail    = rail{name: "snap", vendor: "snap:" + snapRailBank, isSubmit: pathEnds(snap.PathTransfer), start: startSnapRail}
	// rails are the rails every fault test runs on.
	rails = []rail{sandboxRail, xenditRail, snapRail}
)

func pathEnds(suffix string) func(*http.Request) bool {
	return func(r *http.Request) bool {
		return r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, suffix)
	}
}

// startSandboxRail serves simbank and simwallet (package vendorsim),
// whose callbacks go to callbackBase/<vendor>.
func startSandboxRail(t *testing.T, o railOptions) railSim {
	sim, err := vendorsim.NewServer(vendorsim.ServerOptions{Token: simSecret, CallbackSecret: simCallbackSecret, CallbackURL: o.callbackBase,
		Sandbox: sandbox.Options{CompleteAfter: o.completeAfter, Store: o.store}, PollInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return railSim{
		handler: sim,
		run:     func(ctx context.Context) { sim.Run(ctx) },
		connect: func(t *testing.T, url string) (vendors.Registry, []string) {
			reg, err := vendorsim.NewRegistry(url, vendorsim.Secrets{Token: simSecret, CallbackSecret: simCallbackSecret},
				vendorsim.ClientOptions{Timeout: 2 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			return reg, []string{"VENDORSIM_URL=" + url, "VENDORSIM_TOKEN=" + simSecret, "VENDORSIM_CALLBACK_SECRET=" + simCallbackSecret}
		},
		submits: func(ref string) (int, error) {
			return sim.Vendor(sandbox.SimBank).SubmitCalls(context.Background(), ref)
		},
		complete: func(ref string, paid bool) error {
			if paid {
				return sim.Vendor(sandbox.SimBank).Complete(context.Background(), ref, "SUCCESS", "")
			}
			return sim.Vendor(sandbox.SimBank).Complete(context.Background(), ref, "FAILED", "completed as failed by the test")
		},
	}
}

// The Xendit rail's secret key and webhook token.
const xenditSimKey, xenditSimToken = "xnd_development_faulttest", "fault-test-xendit-callback-token"

// startXenditRail serves xenditsim, whose webhooks go to
// callbackBase/xendit. The service reaches it as `payoutd` would in
// production: the XENDIT_* variables, the vendor from
// app.VendorRegistry's xendit.New.
func startXenditRail(t *testing.T, o railOptions) railSim {
	callbackURL := ""
	if o.callbackBase != "" {
		callbackURL = o.callbackBase + "/" + xendit.Name
	}
	sim, err := xenditsim.New(xenditsim.Options{SecretKey: xenditSimKey, CallbackToken: xenditSimToken,
		CallbackURL: callbackURL, CompleteAfter: o.completeAfter})
	if err != nil {
		t.Fatal(err)
	}
	return railSim{
		handler: sim,
		run:     func(ctx context.Context) { sim.Run(ctx, 50*time.Millisecond) },
		connect: func(t *testing.T, url string) (vendors.Registry, []string) {
			x, err := xendit.New(xendit.Options{BaseURL: url, SecretKey: xenditSimKey, CallbackToken: xenditSimToken, Timeout: 2 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			// The sandbox vendors stay beside it, as in app.VendorRegistry.
			reg := sandbox.Registry(sandbox.Options{})
			reg[x.Name()] = x
			return reg, []string{"XENDIT_BASE_URL=" + url, "XENDIT_SECRET_KEY=" + xenditSimKey, "XENDIT_CALLBACK_TOKEN=" + xenditSimToken}
		},
		submits:     func(ref string) (int, error) { return sim.SubmitCalls(ref), nil },
		statusCalls: sim.ReferenceReads,
		complete: func(ref string, paid bool) error {
			if paid {
				return sim.Complete(ref, "SUCCEEDED", "")
			}
			return sim.Complete(ref, "FAILED", xenditsim.FailureRejectedByChannel)
		},
	}
}

// The SNAP rail's bank and its onboarding values (made up).
const (
	snapRailBank                       = "bca"
	snapRailPartner, snapRailClientKey = "FAULTTEST01", "fault-test-snap-client-key"
	snapRailSecret, snapRailChannel    = "fault-test-snap-client-secret", "95221"
	snapRailSource                     = "8880001234"
)

var (
	snapRailKeysOnce                  sync.Once
	snapRailPlatform, snapRailBankKey *rsa.PrivateKey
)

// snapRailKeys are the platform's and the bank's RSA keys, made once per
// test binary (a 2048-bit key takes a while).
func snapRailKeys() (platform, bank *rsa.PrivateKey) {
	snapRailKeysOnce.Do(func() {
		var err error
		if snapRailPlatform, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
			panic(err)
		}
		if snapRailBankKey, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
			panic(err)
		}
	})
	return snapRailPlatform, snapRailBankKey
}

// startSnapRail serves snapsim as the bank bca, whose signed notifications
// go to callbackBase/snap/bca. The worker process reaches it as `payoutd`
// would in production: SNAP_BANKS and the SNAP_BCA_* variables, the keys
// in files; the in-process API through snap.New on the same database.
func startSnapRail(t *testing.T, o railOptions) railSim {
	platform, bankKey := snapRailKeys()
	callbackURL := ""
	if o.callbackBase != "" {
		callbackURL = o.callbackBase + "/snap/" + snapRailBank
	}
	bank := snapsim.New(snapsim.Options{PartnerPublicKey: &platform.PublicKey, ClientKey: snapRailClientKey,
		ClientSecret: snapRailSecret, PartnerID: snapRailPartner, SourceAccountNo: snapRailSource,
		CompleteAfter: o.completeAfter, BankPrivateKey: bankKey, CallbackURL: callbackURL})
	return railSim{
		handler: bank,
		run:     func(ctx context.Context) { _ = bank.Run(ctx, 50*time.Millisecond) },
		connect: func(t *testing.T, url string) (vendors.Registry, []string) {
			v, err := snap.New(snap.Options{Bank: snapRailBank, BaseURL: url, PartnerID: snapRailPartner, ClientKey: snapRailClientKey,
				ClientSecret: snapRailSecret, ChannelID: snapRailChannel, SourceAccountNo: snapRailSource, PrivateKey: platform,
				BankPublicKey: &bankKey.PublicKey, Notifications: true, Store: snap.NewDBStore(o.db, snapRailBank), Timeout: 2 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			reg := sandbox.Registry(sandbox.Options{})
			reg[v.Name()] = v
			dir := t.TempDir()
			privateFile, publicFile := writePEM(t, dir, "platform.pem", "PRIVATE KEY", mustPKCS8(t, platform)),
				writePEM(t, dir, "bank.pem", "PUBLIC KEY", mustPKIX(t, &bankKey.PublicKey))
			return reg, []string{"SNAP_BANKS=" + snapRailBank, "SNAP_BCA_BASE_URL=" + url, "SNAP_BCA_PARTNER_ID=" + snapRailPartner,
				"SNAP_BCA_CLIENT_KEY=" + snapRailClientKey, "SNAP_BCA_CLIENT_SECRET=" + snapRailSecret,
				"SNAP_BCA_CHANNEL_ID=" + snapRailChannel, "SNAP_BCA_SOURCE_ACCOUNT=" + snapRailSource,
				"SNAP_BCA_PRIVATE_KEY_FILE=" + privateFile, "SNAP_BCA_BANK_PUBLIC_KEY_FILE=" + publicFile}
		},
		submits:     func(ref string) (int, error) { return bank.SubmitCalls(ref), nil },
		statusCalls: bank.StatusCalls,
		complete: func(ref string, paid bool) error {
			if paid {
				return bank.Complete(ref, vendors.PayoutSuccess, "")
			}
			return bank.Complete(ref, vendors.PayoutFailed, "completed as failed by the test")
		},
	}
}

func mustPKCS8(t *testing.T, k *rsa.PrivateKey) []byte {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return der
}

func mustPKIX(t *testing.T, k *rsa.PublicKey) []byte {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return der
}

// writePEM writes der as a PEM block of the given type, readable only by
// its owner, and returns the file's path.
func writePEM(t *testing.T, dir, name, typ string, der []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// eachRail runs test as a subtest per rail.
func eachRail(t *testing.T, test func(t *testing.T, r rail)) {
	for _, r := range rails {
		t.Run(r.name, func(t *testing.T) { test(t, r) })
	}
}
