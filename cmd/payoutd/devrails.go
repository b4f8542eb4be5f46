package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/payoutd/payoutd/internal/config"
	"github.com/payoutd/payoutd/vendors/sandbox"
	"github.com/payoutd/payoutd/vendors/xendit"
	"github.com/payoutd/payoutd/vendors/xendit/xenditsim"
)

// devRail is a --vendors value: the wallets the demo client gets on it and,
// for a simulated rail, the simulator dev mode runs beside the service.
type devRail struct {
	name string
	// phrase names the rail in the banner's first line.
	phrase string
	// wallets the demo client gets, in this order.
	wallets []demoWalletSpec
	// simulate starts the rail's simulator; nil: its vendors run in this
	// process (the sandbox).
	simulate func(simOptions) (simulatedRail, error)
	// maskEnv, when set, hides the environment's configuration of the
	// simulated provider before it is read: the simulator's replaces it.
	maskEnv func(getenv func(string) string) func(string) string
}

// demoWalletSpec is one wallet of the demo client.
type demoWalletSpec struct {
	name, vendor string
	// opening is the balance it is funded with.
	opening string
	// payoutRecipe, when set, titles the banner's payout command for it.
	payoutRecipe string
	// recipeBank is the bank_code of that command (default bca).
	recipeBank string
	// recipeHolder, when set, is the command's account_holder_name: for a
	// rail whose inquiry may return no name.
	recipeHolder string
}

// devRails are the rails dev mode knows. A new simulated rail is one entry
// here and one simulatedRail (see devsnap.go for one).
var devRails = []devRail{
	{name: "sandbox", phrase: "sandbox vendors", wallets: []demoWalletSpec{
		{"Main wallet", sandbox.SimBank, "10000000", "A payout of 100000 to the sandbox account 1234567890 at BCA", "", ""},
		{"E-wallet payouts", sandbox.SimWallet, "1000000", "", "", ""},
	}},
	{name: "simulated-xendit", phrase: "simulated Xendit", simulate: newSimulatedXendit, maskEnv: maskXenditEnv, wallets: []demoWalletSpec{
		// Xendit requires the holder's name and has no inquiry of its own:
		// with simulated SNAP beside it, SNAP's inquiry gives the name
		// (XENDIT_INQUIRY_BANK), which wins; alone, the merchant's is sent.
		{"Xendit wallet", xendit.Name, "10000000", "A payout of 100000 over the simulated Xendit rail to account 1234567890 at BCA", "", "Budi Santoso"},
	}},
	// SNAP's transfer is interbank ([MT-XFER]): the recipe pays out of
	// BCA to an account at BRI.
	{name: "simulated-snap", phrase: "simulated SNAP BI (BCA)", simulate: newSimulatedSnap, maskEnv: maskSnapEnv, wallets: []demoWalletSpec{
		{"BCA (SNAP) wallet", "snap:" + devSnapBank, "10000000", "A payout of 100000 over the simulated SNAP rail (BCA) to account 1234567890 at BRI", "bri", ""},
	}},
}

func devRailNamed(name string) (devRail, bool) {
	for _, r := range devRails {
		if r.name == name {
			return r, true
		}
	}
	return devRail{}, false
}

func devRailNames() string {
	names := make([]string, len(devRails))
	for i, r := range devRails {
		names[i] = r.name
	}
	return strings.Join(names, ", ")
}

// simOptions are what every simulator is started with.
type simOptions struct {
	// completeAfter is how long a payout stays in flight
	// (SANDBOX_COMPLETE_AFTER).
	completeAfter time.Duration
	log           *slog.Logger
}

// simulatedRail is a vendor's simulator run in dev mode's process on its
// own loopback listener, spoken to over HTTP as the real provider would be.
type simulatedRail interface {
	// configure points the service's configuration at the simulator.
	configure(cfg *config.Config)
	// serve runs the simulator until ctx ends.
	serve(ctx context.Context) error
	// connect starts the simulator's webhooks to the service at apiBase,
	// once the service listens there.
	connect(apiBase string) error
	// describe writes the banner's lines about the simulator.
	describe(w io.Writer, apiBase string)
	// close frees the listener when serve never ran.
	close()
}

// startSimulators starts the simulator of each simulated rail, closing
// those started when one fails.
func startSimulators(rails []devRail, o simOptions) ([]simulatedRail, error) {
	var sims []simulatedRail
	for _, r := range rails {
		if r.simulate == nil {
			continue
		}
		s, err := r.simulate(o)
		if err != nil {
			closeSimulators(sims)
			return nil, fmt.Errorf("start the %s simulator: %w", r.name, err)
		}
		sims = append(sims, s)
	}
	return sims, nil
}

func closeSimulators(sims []simulatedRail) {
	for _, s := range sims {
		s.close()
	}
}

// simulatedXendit is xenditsim (vendors/xendit/xenditsim) with a generated
// secret key and callback token. Its webhooks need the service's address,
// known only once the api listens: until connect the simulator answers
// 503, which the adapter treats as Xendit being briefly unavailable.
type simulatedXendit struct {
	ln            net.Listener
	srv           *http.Server
	secret, token string
	completeAfter time.Duration
	log           *slog.Logger
	sim           atomic.Pointer[xenditsim.Server]
	connected     chan struct{}
}

func newSimulatedXendit(o simOptions) (simulatedRail, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	x := &simulatedXendit{ln: ln, completeAfter: o.completeAfter, log: o.log, connected: make(chan struct{}),
		// Xendit's development keys start xnd_development_; the token is
		// another secret (never the key).
		secret: "xnd_development_" + randomHex(24), token: randomHex(24)}
	x.srv = simServer(wireLog(xendit.Name, o.log, http.HandlerFunc(x.serveHTTP)), o.log)
	return x, nil
}

// maskXenditEnv hides XENDIT_*: the simulator's generated key replaces
// the environment's, which is neither read nor checked (a live key there
// would otherwise stop staging's start for nothing).
func maskXenditEnv(getenv func(string) string) func(string) string {
	return func(name string) string {
		if strings.HasPrefix(name, "XENDIT_") {
			return ""
		}
		return getenv(name)
	}
}

func (x *simulatedXendit) url() string { return "http://" + x.ln.Addr().String() }

func (x *simulatedXendit) configure(cfg *config.Config) {
	// The simulator's generated secrets replace any XENDIT_* of the
	// environment: a real key must never reach the simulator.
	cfg.Xendit.SecretKey, cfg.Xendit.CallbackToken, cfg.Xendit.BaseURL = x.secret, x.token, x.url()
}

func (x *simulatedXendit) serveHTTP(w http.ResponseWriter, r *http.Request) {
	sim := x.sim.Load()
	if sim == nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, `{"error_code":"SERVER_ERROR","message":"the simulator is starting"}`)
		return
	}
	sim.ServeHTTP(w, r)
}

func (x *simulatedXendit) connect(apiBase string) error {
	sim, err := xenditsim.New(xenditsim.Options{SecretKey: x.secret, CallbackToken: x.token,
		CallbackURL: apiBase + "/vendor-callbacks/" + xendit.Name, CompleteAfter: x.completeAfter, Logger: x.log,
		HTTPClient: &http.Client{Timeout: 10 * time.Second, Transport: webhookLog{provider: xendit.Name, log: x.log}}})
	if err != nil {
		return err
	}
	x.sim.Store(sim)
	close(x.connected)
	return nil
}

func (x *simulatedXendit) serve(ctx context.Context) error {
	webhooks := callbacksOnceConnected(x.connected, func(ctx context.Context, every time.Duration) error {
		return x.sim.Load().Run(ctx, every)
	})
	return serveSim(ctx, webhooks, x.srv, x.ln, x.log)
}

// callbacksOnceConnected is a simulated rail's callback loop (run, every
// 200 ms) started once dev's API listens (connected closes): until then
// there is nowhere to call back.
func callbacksOnceConnected(connected <-chan struct{}, run func(ctx context.Context, every time.Duration) error) func(context.Context) error {
	return func(ctx context.Context) error {
		select {
		case <-ctx.Done():
			return nil
		case <-connected:
			return run(ctx, 200*time.Millisecond)
		}
	}
}

func (x *simulatedXendit) close() { x.ln.Close() }

func (x *simulatedXendit) describe(w io.Writer, apiBase string) {
	fmt.Fprintf(w, `  xendit           Xendit Payouts v2 simulator at %[1]s (XENDIT_BASE_URL)
                   webhooks with x-callback-token to %[2]s/vendor-callbacks/xendit
                   secret key      %[3]s  (basic-auth username, empty password)
                   callback token  %[4]s
                   its channels:   curl -s -u '%[3]s:' %[1]s/payouts_channels
`, x.url(), apiBase, x.secret, x.token)
}

// wireLog logs each request a simulator answers (method, path and query,
// status) so that a newcomer sees the provider's protocol on the wire.
// Bodies and headers are not logged: they carry account numbers and keys.
func wireLog(provider string, log *slog.Logger, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(rec, r)
		log.Info("simulator request", slog.String("provider", provider), slog.String("method", r.Method),
			slog.String("path", r.URL.RequestURI()), slog.Int("status", rec.status))
	})
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

// webhookLog is the transport of a simulator's webhooks: it logs where each
// went and what the service answered.
type webhookLog struct {
	provider string
	log      *slog.Logger
}

func (t webhookLog) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	attrs := []any{slog.String("provider", t.provider), slog.String("url", req.URL.Scheme+"://"+req.URL.Host+req.URL.Path)}
	if err != nil {
		t.log.Warn("simulator webhook not delivered", append(attrs, slog.Any("error", err))...)
		return nil, err
	}
	t.log.Info("simulator webhook", append(attrs, slog.Int("status", resp.StatusCode))...)
	return resp, nil
}
