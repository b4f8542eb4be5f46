package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/payoutd/payoutd/admin"
	"github.com/payoutd/payoutd/models"
)

// addWebhooks starts the webhook sink and gives the first
// -concurrent-webhooks share of the phase's merchants (at least one, and
// the hot sub-phase's own) a payout webhook URL to it; cfg gets what the
// api and the worker need to deliver there. stop closes the sink.
func (cr *concurrentRun) addWebhooks(ctx context.Context, cfg *serverConfig) (stop func(), err error) {
	dir, err := os.MkdirTemp("", "payoutd-loadtest-sink-")
	if err != nil {
		return nil, err
	}
	sink, err := startWebhookSink(dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	stop = func() {
		sink.close()
		os.RemoveAll(dir)
	}
	clients := cr.spread.Clients
	n := hookedMerchants(cr.s.o.concurrentWebhooks, len(clients))
	cr.hooked = make(map[uuid.UUID]bool, n)
	for _, c := range clients[:n] {
		clientID, err := uuid.Parse(c.ClientID)
		if err == nil {
			_, err = admin.UpdateClient(ctx, cr.spread.Admin, clientID, map[string]string{"payout-webhook-url": sink.url})
		}
		if err != nil {
			stop()
			return nil, fmt.Errorf("webhook URL of a load test merchant: %w", err)
		}
		walletID, err := uuid.Parse(c.WalletID)
		if err != nil {
			stop()
			return nil, err
		}
		cr.hooked[walletID] = true
	}
	cfg.railEnv = append(slices.Clone(cfg.railEnv), sink.env()...)
	cr.sink = sink
	progress(cr.stderr, "concurrent: %d of %d merchants have a payout webhook URL to the tool's HTTPS sink", n, len(clients))
	return stop, nil
}

// hookedMerchants is share of n, rounded up: at least one when share > 0.
func hookedMerchants(share float64, n int) int {
	return min(n, max(1, int(math.Ceil(share*float64(n)))))
}

// waitDeliveries waits until every SUCCESS or FAILED payout of the
// sub-phase on a hooked wallet has had its event delivered to the sink,
// at most -concurrent-drain-timeout, and measures the deliveries.
func (cr *concurrentRun) waitDeliveries(ctx context.Context, keyBase string, hot bool) (*webhookFigures, error) {
	rows, err := readPayoutTimes(ctx, cr.s.db, keyBase)
	if err != nil {
		return nil, err
	}
	var lastCreate time.Time
	var expect []hookedPayout
	ids := []uuid.UUID{}
	for _, r := range rows {
		lastCreate = later(lastCreate, r.CreatedAt)
		if !cr.hooked[r.WalletID] || (r.Status != models.StatusSuccess && r.Status != models.StatusFailed) {
			continue
		}
		expect = append(expect, hookedPayout{id: r.ID, terminal: r.ended()})
		ids = append(ids, r.ID)
	}
	deadline := time.Now().Add(cr.s.o.concurrentDrainTimeout)
	for cr.sink.received(ids) < len(ids) && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-cr.worker.exited:
			return nil, fmt.Errorf("payoutd worker exited during the concurrent phase: %v", cr.worker.err)
		case <-time.After(concurrentPollGap / 5):
		}
	}
	merchants := len(cr.hooked)
	if hot {
		merchants = 1
	}
	return cr.sink.figures(expect, lastCreate, merchants), nil
}

// webhookSink is the merchants' backend in the concurrent phase: an HTTPS
// server on loopback that answers every payout webhook 200 at once and
// notes when each payout's event first arrived, so that the phase measures
// what a merchant with a webhook URL sees, and the worker does the
// deliveries a real run has (the real shape).
//
// Production delivers only over https and to no loopback address, so the
// sink has a certificate of its own, made up for the run, and the api and
// worker get it as their only root (SSL_CERT_FILE) with 127.0.0.1/32
// allowed (WEBHOOK_ALLOWED_NETWORKS).
type webhookSink struct {
	srv      *http.Server
	url      string
	certFile string

	mu         sync.Mutex
	first      map[uuid.UUID]time.Time // disbursementId → first delivery
	events     map[string]bool         // eventIds seen
	deliveries int                     // POSTs answered 200
	duplicates int                     // deliveries of an eventId seen before
	malformed  int                     // bodies that were not a payout event
}

// startWebhookSink listens on a free loopback port and writes the sink's
// certificate into dir.
func startWebhookSink(dir string) (*webhookSink, error) {
	cert, certPEM, err := loopbackCertificate()
	if err != nil {
		return nil, err
	}
	s := &webhookSink{first: map[uuid.UUID]time.Time{}, events: map[string]bool{}}
	s.certFile = filepath.Join(dir, "webhook-sink.pem")
	if err := os.WriteFile(s.certFile, certPEM, 0o600); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s.url = "https://" + ln.Addr().String() + "/payout-events"
	s.srv = &http.Server{Handler: http.HandlerFunc(s.receive), ReadHeaderTimeout: 10 * time.Second,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}}
	go s.srv.ServeTLS(ln, "", "") //nolint:errcheck // Close ends it
	return s, nil
}

// env is what the api and the worker need to deliver to the sink.
func (s *webhookSink) env() []string {
	return []string{"SSL_CERT_FILE=" + s.certFile, "WEBHOOK_ALLOWED_NETWORKS=127.0.0.1/32"}
}

func (s *webhookSink) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.srv.Shutdown(ctx)
}

// sinkEvent is what the sink reads of a delivery (the webhook body of
// docs/design.md, Webhooks).
type sinkEvent struct {
	EventID string `json:"eventId"`
	Data    struct {
		DisbursementID uuid.UUID `json:"disbursementId"`
	} `json:"data"`
}

// receive answers 200 to a payout event and notes it; anything else is
// counted as malformed and answered 400, which the worker retries later.
func (s *webhookSink) receive(w http.ResponseWriter, r *http.Request) {
	at := time.Now()
	var ev sinkEvent
	err := json.NewDecoder(io.LimitReader(r.Body, 64<<10)).Decode(&ev)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil || r.Method != http.MethodPost || ev.EventID == "" || ev.Data.DisbursementID == uuid.Nil {
		s.malformed++
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	s.deliveries++
	if s.events[ev.EventID] {
		s.duplicates++
	}
	s.events[ev.EventID] = true
	if _, ok := s.first[ev.Data.DisbursementID]; !ok {
		s.first[ev.Data.DisbursementID] = at
	}
	w.WriteHeader(http.StatusOK)
}

// received tells how many of ids have had an event delivered.
func (s *webhookSink) received(ids []uuid.UUID) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, id := range ids {
		if _, ok := s.first[id]; ok {
			n++
		}
	}
	return n
}

// webhookFigures are a sub-phase's deliveries: every terminal payout of a
// merchant with a webhook URL expects one event (every SUCCESS and FAILED
// sends one).
type webhookFigures struct {
	Merchants int `json:"merchants"` // of the sub-phase's, with a webhook URL
	Expected  int `json:"expected"`
	Delivered int `json:"delivered"`
	// Deliveries counts every POST of the sub-phase's window, Duplicates
	// those of an event delivered before (receivers dedupe on eventId).
	Deliveries int `json:"deliveries"`
	Duplicates int `json:"duplicates"`
	Malformed  int `json:"malformed"`
	// LastAfterS runs from the sub-phase's last create to its last first
	// delivery; the latencies from each payout's terminal state to it.
	LastAfterS float64 `json:"last_after_s"`
	P50MS      float64 `json:"p50_ms"`
	P99MS      float64 `json:"p99_ms"`
	MaxMS      float64 `json:"max_ms"`
}

// hookedPayout is a terminal payout of a merchant with a webhook URL.
type hookedPayout struct {
	id       uuid.UUID
	terminal time.Time
}

// figures measures the deliveries of payouts, whose last create was at
// lastCreate, and takes the counters since the previous call.
func (s *webhookSink) figures(payouts []hookedPayout, lastCreate time.Time, merchants int) *webhookFigures {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := &webhookFigures{Merchants: merchants, Expected: len(payouts), Deliveries: s.deliveries,
		Duplicates: s.duplicates, Malformed: s.malformed}
	s.deliveries, s.duplicates, s.malformed = 0, 0, 0
	var last time.Time
	latencies := make([]time.Duration, 0, len(payouts))
	for _, p := range payouts {
		at, ok := s.first[p.id]
		if !ok {
			continue
		}
		f.Delivered++
		last = later(last, at)
		latencies = append(latencies, max(0, at.Sub(p.terminal)))
	}
	slices.Sort(latencies)
	if !last.IsZero() {
		f.LastAfterS = round(last.Sub(lastCreate).Seconds(), 3)
	}
	f.P50MS, f.P99MS, f.MaxMS = millis(percentile(latencies, 50)), millis(percentile(latencies, 99)), millis(percentile(latencies, 100))
	return f
}

// loopbackCertificate makes a self-signed certificate for 127.0.0.1,
// valid for a day, that is its own root.
func loopbackCertificate() (tls.Certificate, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: "payoutd load test webhook sink"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("webhook sink certificate: %w", err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	cert, err := tls.X509KeyPair(certPEM, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}))
	if err != nil {
		return tls.Certificate{}, nil, errors.Join(errors.New("webhook sink certificate"), err)
	}
	return cert, certPEM, nil
}
