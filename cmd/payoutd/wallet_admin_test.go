package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/payoutd/payoutd/internal/testenv"
	"github.com/payoutd/payoutd/models"
)

// Operators (or their scripts) may run several `wallet create` for one new
// client at once: every one succeeds and exactly one wallet is the default.
// Each create runs as its own process would, with its own connection.
func TestAdminWalletCreateConcurrentForOneClient(t *testing.T) {
	t.Parallel()
	db, url := testenv.DBWithURL(t)
	c := &cli{t: t, env: map[string]string{"DATABASE_URL": url, "SECRETS_KEY": testSecretsKey, "APP_ENV": "staging"}}
	for round := range 3 {
		clientID := c.ok("client", "create", "--name", fmt.Sprintf("Toko %d", round))["client_id"].(string)
		const creates = 6
		type result struct {
			code           int
			stdout, stderr string
		}
		results := make([]result, creates)
		var wg sync.WaitGroup
		for i := range creates {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var out, errOut bytes.Buffer
				args := []string{"admin", "wallet", "create", "--client", clientID, "--name", fmt.Sprintf("W%d", i), "--vendor", "simbank"}
				code := run(context.Background(), args, &out, &errOut, func(k string) string { return c.env[k] })
				results[i] = result{code, out.String(), errOut.String()}
			}()
		}
		wg.Wait()
		for i, r := range results {
			var created map[string]any
			if r.code != 0 || json.Unmarshal([]byte(r.stdout), &created) != nil || created["wallet_id"] == nil {
				t.Errorf("round %d create %d: exit %d, stdout %q, stderr %q", round, i, r.code, r.stdout, r.stderr)
			}
		}
		var wallets []models.Wallet
		if err := db.Where("client_id = ?", clientID).Find(&wallets).Error; err != nil {
			t.Fatal(err)
		}
		defaults := 0
		for _, w := range wallets {
			if w.IsDefault {
				defaults++
			}
		}
		if len(wallets) != creates || defaults != 1 {
			t.Fatalf("round %d: %d wallets with %d defaults, want %d with exactly 1", round, len(wallets), defaults, creates)
		}
	}
}

// driverWords are fragments of PostgreSQL, SQLite and driver messages that
// must never reach an operator's answer.
var driverWords = []string{"duplicate key", "constraint", "SQLSTATE", "ERROR:", "UNIQUE", "violates", "sqlite", "pq:", "pgx", "duplicated key"}

// A constraint the database enforces and the command did not foresee
// surfaces as a clear sentence, not as the driver's text; the detail goes
// to the log lines after it.
func TestAdminConstraintViolationIsACleanMessage(t *testing.T) {
	t.Parallel()
	db, url := testenv.DBWithURL(t)
	c := &cli{t: t, env: map[string]string{"DATABASE_URL": url, "SECRETS_KEY": testSecretsKey, "APP_ENV": "staging"}}
	clientID := c.ok("client", "create", "--name", "Toko")["client_id"].(string)
	// A rule the code does not know about, as a later migration or a DBA
	// might add one.
	if err := db.Exec(`CREATE UNIQUE INDEX test_wallet_names ON wallets (client_id, name)`).Error; err != nil {
		t.Fatal(err)
	}
	c.ok("wallet", "create", "--client", clientID, "--name", "Main", "--vendor", "simbank")
	msg := c.fails(1, "wallet", "create", "--client", clientID, "--name", "Main", "--vendor", "simbank")
	for _, w := range driverWords {
		if strings.Contains(strings.ToLower(msg), strings.ToLower(w)) {
			t.Fatalf("operator message carries driver text %q: %q", w, msg)
		}
	}
	if !strings.Contains(msg, "conflicts with an existing record") {
		t.Fatalf("operator message %q does not say what happened", msg)
	}
}
