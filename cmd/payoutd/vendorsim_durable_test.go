package main

import (
	"bufio"
	"context"
	"errors"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/payoutd/payoutd/internal/testenv"
	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors"
	"github.com/payoutd/payoutd/vendors/vendorsim"
)

// A vendor's payouts outlive its processes. With VENDORSIM_DATABASE_URL,
// a payoutd vendorsim stopped and started again still knows every payout
// it accepted: a status check answers it, and a second submit of its
// reference is counted against the first instead of paying again. Without
// it (memory), the new process has never heard of the payout: a service
// resolving an unanswered submit would be told "unknown" and pay again.
func TestVendorSimDatabaseKeepsPayoutsAcrossRestarts(t *testing.T) {
	t.Parallel()
	_, dbURL := testenv.DBWithURL(t)
	payout := vendors.Payout{HolderName: "Budi Santoso", Reference: "durable-ref", BankCode: "bca", AccountNo: "1234567890", TransferType: models.BIFAST, Amount: models.Rupiah(50_000)}

	first := startVendorSim(t, map[string]string{"VENDORSIM_DATABASE_URL": dbURL})
	if res, err := first.client.Submit(context.Background(), payout); err != nil || res.Reference != payout.Reference {
		t.Fatalf("Submit = %+v, %v", res, err)
	}
	first.stop()

	second := startVendorSim(t, map[string]string{"VENDORSIM_DATABASE_URL": dbURL})
	res, err := second.client.Status(context.Background(), payout.Reference)
	if err != nil || res.Status != vendors.PayoutSuccess {
		t.Fatalf("after a restart Status = %+v, %v; want the payout accepted before it, paid", res, err)
	}
	if _, err := second.client.Submit(context.Background(), payout); err != nil {
		t.Fatal(err)
	}
	if calls, err := second.client.SubmitCalls(context.Background(), payout.Reference); err != nil || calls != 2 {
		t.Errorf("SubmitCalls = %d, %v; want 2: both submits counted against one payout", calls, err)
	}
	second.stop()

	// In memory (the default), the restart forgets it.
	mem := startVendorSim(t, nil)
	if _, err := mem.client.Submit(context.Background(), payout); err != nil {
		t.Fatal(err)
	}
	mem.stop()
	mem = startVendorSim(t, nil)
	if _, err := mem.client.Status(context.Background(), payout.Reference); !errors.Is(err, vendors.ErrUnknownPayout) {
		t.Errorf("in memory, after a restart Status err = %v; want ErrUnknownPayout", err)
	}
	mem.stop()
}

func TestVendorSimRefusesBadDurabilityAndDelaySettings(t *testing.T) {
	t.Parallel()
	for _, extra := range []map[string]string{
		{"VENDORSIM_DATABASE_URL": "mysql://x"},
		{"VENDORSIM_ANSWER_DELAY": "300"},
		{"VENDORSIM_ANSWER_DELAY": "-1s"},
		{"VENDORSIM_ANSWER_DELAY": "2m"},
	} {
		env := map[string]string{"VENDORSIM_TOKEN": "t", "VENDORSIM_CALLBACK_SECRET": "c"}
		var name string
		for k, v := range extra {
			env[k], name = v, k
		}
		var stderr strings.Builder
		code := run(context.Background(), []string{"vendorsim"}, io.Discard, &stderr, func(k string) string { return env[k] })
		if code != 1 || !strings.Contains(stderr.String(), name) {
			t.Errorf("%v: exit %d, stderr %q; want 1 and %s", extra, code, stderr.String(), name)
		}
	}
}

// With VENDORSIM_ANSWER_DELAY the simulator is a slow vendor: it makes
// the payout at once and answers later, so that a caller who gives up (or
// dies) meanwhile has a payout made that it never heard of, and finds it
// by asking.
func TestVendorSimAnswerDelayRecordsBeforeAnswering(t *testing.T) {
	t.Parallel()
	sim := startVendorSim(t, map[string]string{"VENDORSIM_ANSWER_DELAY": "2s"})
	payout := vendors.Payout{HolderName: "Budi Santoso", Reference: "late-ref", BankCode: "bca", AccountNo: "1234567890", TransferType: models.BIFAST, Amount: models.Rupiah(50_000)}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if res, err := sim.client.Submit(ctx, payout); !errors.Is(err, vendors.ErrUnavailable) {
		t.Fatalf("Submit within 300ms = %+v, %v; want no answer (unavailable)", res, err)
	}
	if calls, err := sim.client.SubmitCalls(context.Background(), payout.Reference); err != nil || calls != 1 {
		t.Errorf("SubmitCalls = %d, %v; want 1: the vendor made the payout it had not answered", calls, err)
	}
	if res, err := sim.client.Status(context.Background(), payout.Reference); err != nil || res.Reference != payout.Reference {
		t.Errorf("Status = %+v, %v; want the payout made", res, err)
	}
}

// runningSim is a payoutd vendorsim run in this process on a port of its
// own, with a simbank client.
type runningSim struct {
	client *vendorsim.Client
	stop   func()
}

func startVendorSim(t *testing.T, extra map[string]string) *runningSim {
	t.Helper()
	const token, callbackSecret = "durable-test-token", "durable-test-callback-secret"
	env := map[string]string{"VENDORSIM_ADDR": "127.0.0.1:0", "VENDORSIM_TOKEN": token,
		"VENDORSIM_CALLBACK_SECRET": callbackSecret, "SANDBOX_COMPLETE_AFTER": "1ms"}
	for k, v := range extra {
		env[k] = v
	}
	ctx, cancel := context.WithCancel(context.Background())
	stdoutR, stdoutW := io.Pipe()
	var stderr strings.Builder
	done := make(chan int, 1)
	go func() {
		code := run(ctx, []string{"vendorsim"}, stdoutW, &stderr, func(k string) string { return env[k] })
		stdoutW.Close()
		done <- code
	}()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("payoutd vendorsim exited %d: %s", code, stderr.String())
		}
	}
	t.Cleanup(stop)
	banner, err := bufio.NewReader(stdoutR).ReadString('\n')
	if err != nil {
		cancel()
		t.Fatalf("no banner: %v", err)
	}
	go io.Copy(io.Discard, stdoutR)
	addr := regexp.MustCompile(`http://(127\.0\.0\.1:\d+)/`).FindStringSubmatch(banner)
	if addr == nil {
		t.Fatalf("banner %q names no address", banner)
	}
	c, err := vendorsim.NewClient("http://"+addr[1], "simbank", vendorsim.Secrets{Token: token, CallbackSecret: callbackSecret}, vendorsim.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return &runningSim{client: c, stop: stop}
}
