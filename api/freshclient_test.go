package api

import (
	"net/http"
	"testing"

	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/signature"
)

// An operator's suspension of withdrawals and review threshold hold for
// the very next create, even while this API instance still caches the
// client (its invalidation through Redis is late or lost): a create reads
// them with the wallet, in the query it makes anyway. CI once saw the
// README's operator walk-through create a payout unreviewed right after
// `client update --review-threshold`, the cache's invalidation not yet
// arrived.
func TestCreateHonoursClientSettingsTheCacheHasNotSeen(t *testing.T) {
	t.Parallel()
	e := setupPayouts(t, payoutSetup{})
	create := func(key, amount string) response {
		body := e.body(amount, "1234567890").json()
		return e.signed(e.m, http.MethodPost, "/api/v3/disbursements", body, signature.Sign(e.m.signingSecret, body, e.now()), key)
	}
	create("warm", "100000").created(t, models.StatusSuccess) // the client is cached now

	// Changed behind the cache's back: no ForgetClient, no Redis message.
	if err := e.db.Model(&models.Client{}).Where("id = ?", e.m.id).Update("review_threshold", models.Rupiah(50_000)).Error; err != nil {
		t.Fatal(err)
	}
	create("reviewed", "100000").created(t, models.StatusPendingVerification)

	if err := e.db.Model(&models.Client{}).Where("id = ?", e.m.id).Update("withdrawals", models.WithdrawalsSuspended).Error; err != nil {
		t.Fatal(err)
	}
	create("suspended", "100000").expect(t, http.StatusForbidden, models.ErrWithdrawalsSuspended.Error())
	// A replay still answers while suspended (idempotency rule 6).
	create("reviewed", "100000").replayed(t, http.StatusOK, "")
}
