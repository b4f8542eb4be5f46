package main

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/payoutd/payoutd/internal/config"
	"github.com/payoutd/payoutd/vendors/snap"
	"github.com/payoutd/payoutd/vendors/snap/snapsim"
)

// devSnapBank is the bank simulated-snap simulates.
const devSnapBank = "bca"

// simulatedSnap is snapsim (vendors/snap/snapsim) for bank bca with
// generated RSA keys and made-up credentials. Like simulatedXendit, its
// notifications need the service's address, known only once the api
// listens: until connect the simulator answers 503, which the adapter
// treats as the bank being briefly unavailable.
type simulatedSnap struct {
	ln  net.Listener
	srv *http.Server
	// platform signs the service's access token requests; bank signs the
	// simulator's notifications. Both live in memory only: never printed,
	// never written.
	platform, bank *rsa.PrivateKey
	creds          snap.BankConfig
	completeAfter  time.Duration
	log            *slog.Logger
	sim            atomic.Pointer[snapsim.Bank]
	connected      chan struct{}
}

func newSimulatedSnap(o simOptions) (simulatedRail, error) {
	// 2048 bits: the least snap.ParseRSAPrivateKey and banks accept.
	platform, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	bank, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &simulatedSnap{ln: ln, platform: platform, bank: bank, completeAfter: o.completeAfter, log: o.log,
		connected: make(chan struct{})}
	// Made-up values of the kinds a bank hands out ([BI-SNAP]: X-PARTNER-ID,
	// X-CLIENT-KEY, the client secret, CHANNEL-ID); the source account is
	// the only one the simulator lets transfers debit.
	s.creds = snap.BankConfig{Bank: devSnapBank, BaseURL: "http://" + ln.Addr().String(),
		PartnerID: "DEVPARTNER" + randomHex(3), ClientKey: "dev-client-" + randomHex(8), ClientSecret: randomHex(24),
		ChannelID: "95221", SourceAccount: "8880000001", PrivateKey: platform, BankPublicKey: &bank.PublicKey, Notifications: true}
	vendor := s.creds.Vendor()
	s.srv = simServer(wireLog(vendor, o.log, http.HandlerFunc(s.serveHTTP)), o.log)
	return s, nil
}

// configure replaces any SNAP_BCA_* of the environment with the
// simulator's: a real credential must never reach the simulator. Other
// banks of SNAP_BANKS are left as configured.
func (s *simulatedSnap) configure(cfg *config.Config) {
	banks := []snap.BankConfig{s.creds}
	for _, b := range cfg.SnapBanks {
		if b.Bank != devSnapBank {
			banks = append(banks, b)
		}
	}
	cfg.SnapBanks = banks
}

func (s *simulatedSnap) serveHTTP(w http.ResponseWriter, r *http.Request) {
	sim := s.sim.Load()
	if sim == nil {
		// 503, service 00, case 00: not in the adapter's table, so it is
		// "unavailable" and retried.
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, `{"responseCode":"5030000","responseMessage":"the simulator is starting"}`)
		return
	}
	sim.ServeHTTP(w, r)
}

func (s *simulatedSnap) callbackURL(apiBase string) string {
	return apiBase + snap.CallbackPath(s.creds.Bank)
}

func (s *simulatedSnap) connect(apiBase string) error {
	vendor := s.creds.Vendor()
	sim := snapsim.New(snapsim.Options{PartnerPublicKey: &s.platform.PublicKey, ClientKey: s.creds.ClientKey,
		ClientSecret: s.creds.ClientSecret, PartnerID: s.creds.PartnerID, SourceAccountNo: s.creds.SourceAccount,
		CompleteAfter: s.completeAfter, BankPrivateKey: s.bank, CallbackURL: s.callbackURL(apiBase), Logger: s.log,
		HTTPClient: &http.Client{Timeout: 10 * time.Second, Transport: webhookLog{provider: vendor, log: s.log}}})
	s.sim.Store(sim)
	close(s.connected)
	return nil
}

func (s *simulatedSnap) serve(ctx context.Context) error {
	notify := callbacksOnceConnected(s.connected, func(ctx context.Context, every time.Duration) error {
		return s.sim.Load().Run(ctx, every)
	})
	return serveSim(ctx, notify, s.srv, s.ln, s.log)
}

func (s *simulatedSnap) close() { s.ln.Close() }

// describe shows where the simulator is and the ids it expects, never the
// client secret or a key.
func (s *simulatedSnap) describe(w io.Writer, apiBase string) {
	fmt.Fprintf(w, `  %[1]s         SNAP BI simulator of BCA at %[2]s (SNAP_BCA_BASE_URL)
                   signed transfer notifications to %[3]s
                   partner id %[4]s, client key %[5]s, channel id %[6]s
                   RSA keys and client secret generated for this run, kept in memory
                   quotes name the holder from its account inquiry (SANDBOX <last 4 digits>)
`, s.creds.Vendor(), s.creds.BaseURL, s.callbackURL(apiBase), s.creds.PartnerID, s.creds.ClientKey, s.creds.ChannelID)
}

// maskSnapEnv hides SNAP_BCA_* and bca's place in SNAP_BANKS: a real bank's
// credentials, even incomplete ones, are neither read nor checked, and
// never reach the simulator. Other banks stay as configured.
func maskSnapEnv(getenv func(string) string) func(string) string {
	prefix := snap.EnvPrefix(devSnapBank)
	return func(name string) string {
		switch {
		case strings.HasPrefix(name, prefix):
			return ""
		case name == "SNAP_BANKS":
			var keep []string
			for _, b := range strings.Split(getenv(name), ",") {
				if b = strings.TrimSpace(b); b != "" && !strings.EqualFold(b, devSnapBank) {
					keep = append(keep, b)
				}
			}
			return strings.Join(keep, ",")
		}
		return getenv(name)
	}
}

// useDevInquiryBank makes the simulated SNAP bank resolve holder names for
// the simulated Xendit rail when dev runs both, as an operator would with
// XENDIT_INQUIRY_BANK: Xendit requires the name and cannot inquire it.
func useDevInquiryBank(cfg *config.Config) {
	if cfg.Xendit.SecretKey == "" || cfg.XenditInquiryBank != "" {
		return
	}
	for _, b := range cfg.SnapBanks {
		if b.Bank == devSnapBank {
			cfg.XenditInquiryBank = devSnapBank
		}
	}
}
