package webhooks_test

import (
	"context"
	"crypto/rand"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/payoutd/payoutd/admin"
	"github.com/payoutd/payoutd/internal/credentials"
	"github.com/payoutd/payoutd/internal/metrics"
	"github.com/payoutd/payoutd/internal/metrics/metricstest"
	"github.com/payoutd/payoutd/internal/testenv"
	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors/sandbox"
	"github.com/payoutd/payoutd/webhooks"
)

// Each recorded attempt is counted by event and outcome: a 500 is a retry,
// a 204 delivered, a destination the production guard refuses is blocked.
func TestAttemptsCounted(t *testing.T) {
	t.Parallel()
	r := newReceiver(t, func(n int) int {
		if n == 1 {
			return http.StatusInternalServerError
		}
		return http.StatusNoContent
	})
	m := metrics.New()
	deliver := func(url string, guard webhooks.Guard) (uuid.UUID, *webhooks.Deliverer) {
		db := testenv.DB(t)
		key := make([]byte, 32)
		rand.Read(key)
		sealer, _ := credentials.NewSealer(key)
		deps := admin.Deps{DB: db, Sealer: sealer, Env: models.Staging, Vendors: sandbox.Registry(sandbox.Options{})}
		creds, err := admin.CreateClient(context.Background(), deps, admin.ClientOptions{Name: "Toko", PayoutWebhookURL: url})
		if err != nil {
			t.Fatal(err)
		}
		var ev *models.WebhookEvent
		err = db.Transaction(func(tx *gorm.DB) error {
			ev, err = webhooks.Record(tx, webhooks.NewEvent{ClientID: uuid.MustParse(creds.ClientID), Event: webhooks.DisbursementSuccess,
				SubjectID: uuid.New(), Target: models.TargetPayout, Data: map[string]string{"status": "SUCCESS"}}, time.Now())
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return ev.ID, webhooks.New(webhooks.Options{DB: db, Sealer: sealer, Guard: guard, Timeout: time.Second, Schedule: shortSchedule, Metrics: m})
	}

	id, d := deliver(r.server.URL, webhooks.Guard{})
	var retry *webhooks.RetryLater
	if err := d.Deliver(context.Background(), id); !errors.As(err, &retry) {
		t.Fatalf("first attempt: %v, want a retry", err)
	}
	if err := d.Deliver(context.Background(), id); err != nil {
		t.Fatalf("second attempt: %v", err)
	}
	// Refused before sending (http in production), and at connect time (a
	// loopback address).
	tlsReceiver := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		t.Error("the production guard let a delivery reach 127.0.0.1")
	}))
	t.Cleanup(tlsReceiver.Close)
	for _, url := range []string{r.server.URL, tlsReceiver.URL} {
		blockedID, blocked := deliver(url, webhooks.ProductionGuard(nil))
		blocked.Deliver(context.Background(), blockedID)
	}

	for outcome, want := range map[string]float64{webhooks.OutcomeRetry: 1, webhooks.OutcomeDelivered: 1, webhooks.OutcomeBlocked: 2, webhooks.OutcomeFailed: 0} {
		if n := metricstest.Value(t, m, "payoutd_webhook_attempts_total", "event", webhooks.DisbursementSuccess, "outcome", outcome); n != want {
			t.Errorf("%s attempts counted %v, want %v", outcome, n, want)
		}
	}
	if n := metricstest.Value(t, m, "payoutd_webhook_attempt_duration_seconds"); n != 2 {
		t.Errorf("%v attempts timed, want 2 (a blocked one sends nothing)", n)
	}
	if len(r.got()) != 2 {
		t.Errorf("receiver got %d requests, want 2", len(r.got()))
	}
}
