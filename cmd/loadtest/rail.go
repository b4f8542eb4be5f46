package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/payoutd/payoutd/vendors"
	"github.com/payoutd/payoutd/vendors/sandbox"
	"github.com/payoutd/payoutd/vendors/snap"
	"github.com/payoutd/payoutd/vendors/xendit"
)

// railInfo is an entry of the -rail list: the vendor the load's wallets
// are on and, for a rail served by a simulator, how to start `payoutd
// vendorsim` and what the api and worker are told to reach it. Adding a
// rail is one entry here.
type railInfo struct {
	name    string
	summary string
	// vendor is the wallets' vendor (admin wallet create --vendor).
	vendor string
	// simCommand names the simulator in the summary.
	simCommand string
	// simArgs are the arguments of `payoutd` that serve the rail at addr,
	// calling back to the api at apiBase; nil: the vendor is in-process,
	// no simulator.
	simArgs func(addr, apiBase string) []string
	// simEnv is the simulator's environment beside PATH and HOME.
	simEnv func(s railSecrets, o options) []string
	// serviceEnv is what the api and worker are told to use the simulator
	// at simBase.
	serviceEnv func(s railSecrets, simBase string) []string
	// rsaKeys: the rail signs with RSA key pairs, made for the run
	// (railSecrets.keys).
	rsaKeys bool
}

// railSecrets are the secrets a simulated rail is run with: made up for
// the run, given to the simulator and the service through their
// environments only (a key by the path of its file), never printed.
type railSecrets struct {
	// token is what the service sends or signs its requests with (bearer
	// token, API key, SNAP client secret).
	token string
	// callbackSecret is what the simulator's callbacks carry or are
	// signed with, on a rail without RSA keys; never equal to token.
	callbackSecret string
	// keys are the RSA key files of a rail with rsaKeys: the bank's pair
	// signs the SNAP notifications, not callbackSecret.
	keys railKeys
}

// rails lists every -rail value.
var rails = []railInfo{
	{
		name: "sandbox", summary: "simbank in the api and worker themselves (the in-process sandbox vendor)",
		vendor: sandbox.SimBank,
	},
	{
		name: "vendorsim", summary: "simbank served over HTTP by `payoutd vendorsim` (VENDORSIM_URL), calling back to the api",
		vendor: sandbox.SimBank, simCommand: "payoutd vendorsim",
		simArgs: func(addr, apiBase string) []string {
			return []string{"vendorsim", "--addr", addr}
		},
		simEnv: func(s railSecrets, o options) []string {
			return []string{"VENDORSIM_TOKEN=" + s.token, "VENDORSIM_CALLBACK_SECRET=" + s.callbackSecret,
				"SANDBOX_COMPLETE_AFTER=" + o.sandboxCompleteAfter.String(), "VENDORSIM_ANSWER_DELAY=" + o.railAnswerDelay.String()}
		},
		serviceEnv: func(s railSecrets, simBase string) []string {
			return []string{"VENDORSIM_URL=" + simBase, "VENDORSIM_TOKEN=" + s.token, "VENDORSIM_CALLBACK_SECRET=" + s.callbackSecret}
		},
	},
	{
		name: "xendit", summary: "xendit (Payouts v2) served over HTTP by `payoutd vendorsim --provider xendit`, webhooks to the api",
		vendor: xendit.Name, simCommand: "payoutd vendorsim --provider xendit",
		simArgs: func(addr, apiBase string) []string {
			return []string{"vendorsim", "--provider", "xendit", "--addr", addr, "--callback-url", apiBase + "/vendor-callbacks/" + xendit.Name}
		},
		simEnv: func(s railSecrets, o options) []string {
			return []string{"XENDIT_SECRET_KEY=" + s.token, "XENDIT_CALLBACK_TOKEN=" + s.callbackSecret,
				"SANDBOX_COMPLETE_AFTER=" + o.sandboxCompleteAfter.String()}
		},
		serviceEnv: func(s railSecrets, simBase string) []string {
			return []string{"XENDIT_SECRET_KEY=" + s.token, "XENDIT_CALLBACK_TOKEN=" + s.callbackSecret, "XENDIT_BASE_URL=" + simBase}
		},
	},
	{
		name: "snap", summary: "SNAP BI bank " + snapRailBank + " served over HTTP by `payoutd vendorsim --provider snap`, notifications to the api",
		vendor: snapRailVendor, simCommand: "payoutd vendorsim --provider snap --bank " + snapRailBank, rsaKeys: true,
		simArgs: func(addr, apiBase string) []string {
			return []string{"vendorsim", "--provider", "snap", "--bank", snapRailBank, "--addr", addr, "--callback-url", apiBase + snap.CallbackPath(snapRailBank)}
		},
		simEnv:     snapSimEnv,
		serviceEnv: snapServiceEnv,
	},
}

// The SNAP rail's bank and the ids the service and the simulator share:
// made up, none of them secret (internal/config prints them; the client
// key travels in every request's X-CLIENT-KEY header).
const (
	snapRailBank          = "bca"
	snapRailVendor        = "snap:" + snapRailBank
	snapRailPartnerID     = "LOADTEST"
	snapRailClientKey     = "loadtest-client-key"
	snapRailChannelID     = "95051"
	snapRailSourceAccount = "8800112233"
)

// snapSimEnv is the SNAP simulator's environment (cmd/payoutd snapsim.go):
// the shared ids, the client secret, the platform's public key to verify
// the token request with, the bank's private key to sign notifications.
// It never gets the platform's private key.
func snapSimEnv(s railSecrets, o options) []string {
	p := snap.EnvPrefix(snapRailBank)
	return []string{p + "PARTNER_ID=" + snapRailPartnerID, p + "CLIENT_KEY=" + snapRailClientKey, p + "CLIENT_SECRET=" + s.token,
		p + "SOURCE_ACCOUNT=" + snapRailSourceAccount, p + "PLATFORM_PUBLIC_KEY_FILE=" + s.keys.platformPublic,
		"SNAPSIM_BANK_PRIVATE_KEY_FILE=" + s.keys.bankKey, "SANDBOX_COMPLETE_AFTER=" + o.sandboxCompleteAfter.String()}
}

// snapServiceEnv is what the api and worker read for the bank
// (snap.LoadConfig): SNAP_BANKS and every SNAP_<B>_* variable,
// the keys by file. They never get the bank's private key.
func snapServiceEnv(s railSecrets, simBase string) []string {
	p := snap.EnvPrefix(snapRailBank)
	return []string{"SNAP_BANKS=" + snapRailBank, p + "BASE_URL=" + simBase,
		p + "PARTNER_ID=" + snapRailPartnerID, p + "CLIENT_KEY=" + snapRailClientKey, p + "CLIENT_SECRET=" + s.token,
		p + "CHANNEL_ID=" + snapRailChannelID, p + "SOURCE_ACCOUNT=" + snapRailSourceAccount,
		p + "PRIVATE_KEY_FILE=" + s.keys.platformKey, p + "BANK_PUBLIC_KEY_FILE=" + s.keys.bankPublic}
}

const defaultRail = "sandbox"

func lookupRail(name string) (railInfo, bool) {
	for _, r := range rails {
		if r.name == name {
			return r, true
		}
	}
	return railInfo{}, false
}

func railNames() []string {
	names := make([]string, len(rails))
	for i, r := range rails {
		names[i] = r.name
	}
	return names
}

func railHelp() string {
	var b strings.Builder
	for _, r := range rails {
		fmt.Fprintf(&b, "  %-14s %s\n", r.name, r.summary)
	}
	return b.String()
}

// simulated: the rail runs in a simulator process of its own.
func (r railInfo) simulated() bool { return r.simArgs != nil }

// calledBack: the rail's simulator reports final payouts to the api, so
// an api runs through the drain to receive them.
func (r railInfo) calledBack() bool { return r.simulated() }

// railRun is a simulated rail running for a suite: its simulator process
// and the environment that points the api and worker at it.
type railRun struct {
	info railInfo
	sim  *serverProcess
	// base is the simulator's URL.
	base string
	// serviceEnv goes to the api and worker (secrets: never printed).
	serviceEnv []string
	// keys are the run's RSA key files, removed by close.
	keys railKeys
}

// simReadyTimeout bounds the wait for the simulator's port to open.
const simReadyTimeout = 30 * time.Second

// startRail starts the rail's simulator on a free loopback port, calling
// back to the api at apiBase, and returns once it accepts connections.
// A rail without a simulator gives a railRun with nothing to stop. The
// caller closes the railRun once the api and worker have stopped.
func startRail(ctx context.Context, info railInfo, o options, bin *payoutdBinary, apiBase string, logs io.Writer) (*railRun, error) {
	rr := &railRun{info: info}
	if !info.simulated() {
		return rr, nil
	}
	secrets, err := newRailSecrets()
	if err != nil {
		return nil, err
	}
	if info.rsaKeys {
		if secrets.keys, err = newRailKeys(); err != nil {
			return nil, err
		}
		rr.keys = secrets.keys
	}
	if err := rr.startSim(ctx, secrets, o, bin, apiBase, logs); err != nil {
		rr.close(logs)
		return nil, err
	}
	rr.serviceEnv = info.serviceEnv(secrets, rr.base)
	return rr, nil
}

// startSim starts the simulator and waits for its port.
func (rr *railRun) startSim(ctx context.Context, secrets railSecrets, o options, bin *payoutdBinary, apiBase string, logs io.Writer) error {
	addr, err := freeLoopbackAddr()
	if err != nil {
		return err
	}
	env := append(inheritedEnv(), rr.info.simEnv(secrets, o)...)
	// The simulator logs every payout at info: only its warnings and
	// errors reach the tool's output.
	rr.sim, err = startProcessArgs(bin, "vendorsim", rr.info.simArgs(addr, apiBase), env, &levelFilter{w: logs})
	if err != nil {
		return err
	}
	if err := waitListening(ctx, addr, rr.sim); err != nil {
		return err
	}
	rr.base = "http://" + addr
	return nil
}

// stop stops the simulator, if any; safe to call more than once.
func (rr *railRun) stop(logs io.Writer) {
	if rr == nil || rr.sim == nil {
		return
	}
	if err := rr.sim.stop(); err != nil {
		progress(logs, "warning: %v", err)
	}
}

// close stops the simulator and removes the run's key files; safe to
// call more than once. The api and worker read the keys when they start,
// so close comes after the last of them has started.
func (rr *railRun) close(logs io.Writer) {
	if rr == nil {
		return
	}
	rr.stop(logs)
	if err := rr.keys.remove(); err != nil {
		progress(logs, "warning: removing the rail's key files: %v", err)
	}
}

// simPID is the simulator's process id, 0 without one.
func (rr *railRun) simPID() int {
	if rr == nil || rr.sim == nil {
		return 0
	}
	return rr.sim.pid()
}

// describe is the rail's line of the summary, without secrets.
func (rr *railRun) describe(o options) string {
	if !rr.info.simulated() {
		return fmt.Sprintf("%s: wallets on %s, in-process, SANDBOX_COMPLETE_AFTER=%s", rr.info.name, rr.info.vendor, o.sandboxCompleteAfter)
	}
	made := "secrets"
	if rr.info.rsaKeys {
		made = "secrets and RSA keys"
	}
	delay := ""
	if o.railAnswerDelay > 0 {
		delay = ", VENDORSIM_ANSWER_DELAY=" + o.railAnswerDelay.String()
	}
	return fmt.Sprintf("%s: wallets on %s, `%s` at %s (SANDBOX_COMPLETE_AFTER=%s%s, %s made up for the run);\n"+
		"          it calls back to an api that runs through the drain beside the worker",
		rr.info.name, rr.info.vendor, rr.info.simCommand, rr.base, o.sandboxCompleteAfter, delay, made)
}

func newRailSecrets() (railSecrets, error) {
	b := make([]byte, 64)
	if _, err := rand.Read(b); err != nil {
		return railSecrets{}, err
	}
	return railSecrets{token: "lt_" + hex.EncodeToString(b[:32]), callbackSecret: "lt_cb_" + hex.EncodeToString(b[32:])}, nil
}

// waitListening polls addr until it accepts a TCP connection.
func waitListening(ctx context.Context, addr string, p *serverProcess) error {
	deadline := time.Now().Add(simReadyTimeout)
	for {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			conn.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("payoutd %s not listening on %s after %s", p.command, addr, simReadyTimeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-p.exited:
			return fmt.Errorf("payoutd %s exited before it listened: %v", p.command, p.err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// railVendor stands in for the rail's vendor in the tool's own registry,
// which only provisions wallets (admin checks the vendor's name): it pays
// nothing and answers every call with an error.
type railVendor struct{ name string }

var errProvisionOnly = errors.New("loadtest: this vendor only names the wallets' vendor; the api and worker pay")

func (v railVendor) Name() string { return v.name }
func (v railVendor) Banks(context.Context) ([]vendors.Bank, error) {
	return nil, errProvisionOnly
}
func (v railVendor) Inquire(context.Context, vendors.InquiryRequest) (vendors.Account, error) {
	return vendors.Account{}, errProvisionOnly
}
func (v railVendor) Submit(context.Context, vendors.Payout) (vendors.PayoutResult, error) {
	return vendors.PayoutResult{}, errProvisionOnly
}
func (v railVendor) Status(context.Context, string) (vendors.PayoutResult, error) {
	return vendors.PayoutResult{}, errProvisionOnly
}

// provisionRegistry is the registry the tool provisions wallets with: the
// sandbox vendors, and the rail's vendor when it is another.
func provisionRegistry(info railInfo) vendors.Registry {
	reg := sandbox.Registry(sandbox.Options{})
	if _, ok := reg[info.vendor]; !ok {
		reg[info.vendor] = railVendor{name: info.vendor}
	}
	return reg
}
