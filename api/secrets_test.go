package api

import (
	"bytes"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/payoutd/payoutd/internal/logging"
)

// A database writer who swaps two clients' sealed signing secrets must not
// make either client's requests verify with the other's secret: the sealed
// value is bound to its client and field. The request is refused as
// unauthenticated (401, never a 500 or a success), and the operator's log
// names the client and says why.
func TestSwappedSigningSecretsAreRefused(t *testing.T) {
	// Not parallel: it reads the process's log.
	var logs bytes.Buffer
	prev := slog.Default()
	slog.SetDefault(logging.New(&logs, slog.LevelInfo))
	t.Cleanup(func() { slog.SetDefault(prev) })

	b := setup(t)
	alice, mallory := b.newMerchant(), b.newMerchant()
	var sealedA, sealedM string
	row := func(id any) string {
		var s string
		if err := b.db.Raw(`SELECT signing_secret_enc FROM credentials WHERE client_id = ? AND revoked_at IS NULL`, id).Row().Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	sealedA, sealedM = row(alice.id), row(mallory.id)
	for id, v := range map[any]string{alice.id: sealedM, mallory.id: sealedA} {
		if err := b.db.Exec(`UPDATE credentials SET signing_secret_enc = ? WHERE client_id = ? AND revoked_at IS NULL`, v, id).Error; err != nil {
			t.Fatal(err)
		}
	}
	const unusable = "the signing secret of this client cannot be used; ask the operator to rotate the credentials"
	// Mallory signs with her own secret on Alice's key: before, this was
	// Alice's request, authenticated.
	b.do(request{path: "/api/v3/wallets", apiKey: alice.apiKey, sign: mallory.signingSecret}).expect(t, http.StatusUnauthorized, unusable)
	// Alice's own, correct signature is refused too, not answered with a 500.
	b.do(request{path: "/api/v3/wallets", apiKey: alice.apiKey, sign: alice.signingSecret}).expect(t, http.StatusUnauthorized, unusable)
	b.do(request{path: "/api/v3/wallets", apiKey: mallory.apiKey, sign: alice.signingSecret}).expect(t, http.StatusUnauthorized, unusable)
	b.do(request{method: http.MethodPost, path: "/api/v3/debug/signature-check", body: []byte(`{}`), apiKey: alice.apiKey, sign: alice.signingSecret}).
		expect(t, http.StatusUnauthorized, unusable)

	log := logs.String()
	if !strings.Contains(log, alice.id.String()) || !strings.Contains(log, "cannot be opened") {
		t.Fatalf("the operator's log does not name the client and the cause:\n%s", log)
	}
	for _, secret := range []string{alice.signingSecret, mallory.signingSecret} {
		if strings.Contains(log, secret) {
			t.Fatal("a signing secret reached the log")
		}
	}
}
