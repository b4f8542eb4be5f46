package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

// The sink is reached over https with its own certificate as the only
// root, as the worker reaches it (SSL_CERT_FILE); it notes each payout's
// first delivery, counts repeats and refuses what is not a payout event.
func TestWebhookSinkMeasuresFirstDeliveries(t *testing.T) {
	sink, err := startWebhookSink(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer sink.close()
	if !strings.HasPrefix(sink.url, "https://127.0.0.1:") {
		t.Fatalf("sink URL %s: want https on 127.0.0.1", sink.url)
	}
	pemBytes, err := os.ReadFile(sink.certFile)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pemBytes) {
		t.Fatal("the sink's certificate file holds no certificate")
	}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	post := func(body string) int {
		t.Helper()
		resp, err := client.Post(sink.url, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	d1, d2, d3 := uuid.New(), uuid.New(), uuid.New()
	start := time.Now()
	for _, tt := range []struct {
		body string
		want int
	}{
		{`{"eventId":"e1","event":"disbursement.success","data":{"disbursementId":"` + d1.String() + `"}}`, 200},
		{`{"eventId":"e1","event":"disbursement.success","data":{"disbursementId":"` + d1.String() + `"}}`, 200}, // a retry
		{`{"eventId":"e2","event":"disbursement.failed","data":{"disbursementId":"` + d2.String() + `"}}`, 200},
		{`{"eventId":"e3","data":{}}`, 400},
		{`not json`, 400},
	} {
		if got := post(tt.body); got != tt.want {
			t.Errorf("POST %s: %d, want %d", tt.body, got, tt.want)
		}
	}
	if n := sink.received([]uuid.UUID{d1, d2, d3}); n != 2 {
		t.Errorf("received %d of three payouts, want 2", n)
	}
	payouts := []hookedPayout{{id: d1, terminal: start}, {id: d2, terminal: start}, {id: d3, terminal: start}}
	f := sink.figures(payouts, start.Add(-time.Second), 2)
	if f.Merchants != 2 || f.Expected != 3 || f.Delivered != 2 || f.Deliveries != 3 || f.Duplicates != 1 || f.Malformed != 2 {
		t.Errorf("figures %+v: want 2 merchants, 3 expected, 2 delivered, 3 deliveries, 1 duplicate, 2 malformed", f)
	}
	if f.LastAfterS < 1 || f.P50MS <= 0 || f.MaxMS < f.P50MS {
		t.Errorf("figures %+v: the last delivery came over a second after the last create, each after its payout's end", f)
	}
	if again := sink.figures(nil, start, 2); again.Deliveries != 0 || again.Duplicates != 0 || again.Malformed != 0 {
		t.Errorf("a second sub-phase starts with the first one's counters: %+v", again)
	}
}

func TestHookedMerchants(t *testing.T) {
	for _, tt := range []struct {
		share float64
		n     int
		want  int
	}{{0.5, 100, 50}, {0.01, 100, 1}, {0.001, 100, 1}, {1, 100, 100}, {0.34, 3, 2}, {0.5, 1, 1}} {
		if got := hookedMerchants(tt.share, tt.n); got != tt.want {
			t.Errorf("hookedMerchants(%v, %d) = %d, want %d", tt.share, tt.n, got, tt.want)
		}
	}
}

// A sub-phase whose events did not all arrive is not clean, and the notes
// say how many did.
func TestUndeliveredWebhooksAreNotClean(t *testing.T) {
	phase := func(delivered int) *concurrentPhase {
		return &concurrentPhase{Name: "spread", Create: &createFigures{Creates: 10},
			EndToEnd: &endToEnd{Payouts: 10, Success: 10, Complete: true},
			Webhooks: &webhookFigures{Merchants: 5, Expected: 6, Delivered: delivered, Deliveries: delivered, P50MS: 3.5, P99MS: 9, MaxMS: 12, LastAfterS: 0.2}}
	}
	if r := (&concurrentResult{ReconcileOK: true, Phases: []*concurrentPhase{phase(6)}}); !r.clean() {
		t.Error("every event delivered, yet not clean")
	}
	r := &concurrentResult{ReconcileOK: true, Phases: []*concurrentPhase{phase(5)}}
	if r.clean() {
		t.Error("one event of six not delivered, yet clean")
	}
	var out bytes.Buffer
	printConcurrentNotes(&out, r)
	want := "webhooks of 5 merchant(s): 5 of 6 payouts' events delivered (5 POSTs, 0 duplicates, 0 malformed);\n" +
		"           terminal → delivered p50 3.5 ms, p99 9.0 ms, max 12.0 ms; the last 0.20s after the last create"
	if !strings.Contains(out.String(), want) {
		t.Errorf("notes lack %q:\n%s", want, out.String())
	}
}
