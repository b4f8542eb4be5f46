package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/payoutd/payoutd/internal/config"
	"github.com/payoutd/payoutd/signature"
)

type devBanner struct {
	addr    string
	cfg     config.Config
	demo    *demoClient
	rails   []devRail
	sims    []simulatedRail
	dataDir string
	// kept: the data folder is DEV_DATA_DIR's, kept after dev stops;
	// resumed: this run reopened it.
	kept, resumed bool
	startup       time.Duration
}

// printDevBanner tells a new user everything needed to make a first call:
// the demo credentials, a signed request ready to paste (valid for the
// 5-minute window), a recipe that signs afresh with openssl, a payout on
// each rail and where its simulator is.
func printDevBanner(w io.Writer, b devBanner) {
	base := "http://" + hostPort(b.addr)
	def := b.demo.wallets[0]
	path := "/api/v3/wallets/" + def.id + "/balance"
	secret := *b.demo.creds.SigningSecret
	fmt.Fprintf(w, `
payoutd dev — DEVELOPMENT MODE: embedded Redis and SQLite, %s, staging rules.
Nothing here moves real money. %s
Ready in %s at %s

Demo client
  client_id        %s
  api_key          %s
  signing_secret   %s
  callback_secret  %s
`, railPhrases(b.rails), dataPhrase(b), b.startup.Round(time.Millisecond), base,
		b.demo.creds.ClientID, b.demo.creds.APIKey, secret, b.demo.creds.CallbackSecret)
	printDemoWallets(w, b.demo.wallets)
	if len(b.sims) > 0 {
		fmt.Fprint(w, "\nSimulated rails (the provider's protocol over HTTP on this machine; its requests and webhooks show in the log)\n")
		for _, s := range b.sims {
			s.describe(w, base)
		}
	}
	fmt.Fprintf(w, `
Queue dashboard    %s/ops/queues   (user %s, password %s)
Admin CLI          payoutd admin --dev <command>   (this dev's database, Redis and key, from %s)
Webhook inbox      %s/dev/inbox   (the demo's webhooks, their signatures checked; make it answer 500 or time out there)

A signed request, valid for 5 minutes:

  curl -s %s%s \
    -H 'x-api-key: %s' \
    -H 'x-signature: %s'

Signed afresh at any time (bash + openssl; the export line sets what README.md's walk-through uses):

  export BASE=%s KEY=%s SECRET=%s WALLET=%s
  T=$(date +%%s%%3N); SIG=$(printf '%%s.' "$T" | openssl dgst -sha256 -hmac "$SECRET" | sed 's/^.*= //')
  curl -s $BASE/api/v3/wallets/$WALLET/balance -H "x-api-key: $KEY" -H "x-signature: t=$T,v1=$SIG"
`, base, b.cfg.AdminUser, b.cfg.AdminPassword, filepath.Join(b.dataDir, devStateFile), base,
		base, path, b.demo.creds.APIKey, signature.Sign(secret, nil, time.Now()),
		base, b.demo.creds.APIKey, secret, def.id)
	for _, dw := range b.demo.wallets {
		if dw.spec.payoutRecipe != "" {
			printPayoutRecipe(w, base, dw)
		}
	}
	fmt.Fprintf(w, `
A payment of 150000 (open its checkoutUrl: the page shows the QRIS and, in this mode, a button
that simulates paying; paid money settles into the %s %s later):

  curl -s %s/api/v1/payments -H "x-api-key: $KEY" -H "x-timestamp: $(date +%%s%%3N)" \
    -H 'Content-Type: application/json' --data '{"price": 150000, "playerId": "player-1"}'

`, def.spec.name, b.cfg.SettlementDelay, base)
}

// printDemoWallets lists the demo's wallets, the default first.
func printDemoWallets(w io.Writer, wallets []demoWallet) {
	for i, dw := range wallets {
		label, note := "                 ", ""
		if i == 0 {
			label, note = "  wallets        ", ", default"
		}
		fmt.Fprintf(w, "%s  %s  %s (%s%s, balance %s)\n", label, dw.id, dw.spec.name, dw.spec.vendor, note, dw.balance)
	}
}

// printPayoutRecipe prints a payout of 100000 from the wallet dw to account
// 1234567890 at its recipeBank (default BCA), signed with KEY and SECRET of the recipe before it.
func printPayoutRecipe(w io.Writer, base string, dw demoWallet) {
	bank := dw.spec.recipeBank
	if bank == "" {
		bank = "bca"
	}
	holder := ""
	if dw.spec.recipeHolder != "" {
		holder = `,"account_holder_name":"` + dw.spec.recipeHolder + `"`
	}
	fmt.Fprintf(w, `
%s (same KEY and SECRET):

  BODY='{"client_wallet_id":"%s","amount":"100000","bank_code":"%s","account_no":"1234567890","transfer_type":"BIFAST"%s}'
  T=$(date +%%s%%3N); SIG=$(printf '%%s.%%s' "$T" "$BODY" | openssl dgst -sha256 -hmac "$SECRET" | sed 's/^.*= //')
  curl -s %s/api/v3/disbursements -H "x-api-key: $KEY" -H "x-signature: t=$T,v1=$SIG" \
    -H "Idempotency-Key: $(date +%%s%%N)" -H 'Content-Type: application/json' --data-binary "$BODY"
`, dw.spec.payoutRecipe, dw.id, bank, holder, base)
}

// railPhrases names the rails for the banner's first line: "sandbox
// vendors and simulated Xendit".
func railPhrases(rails []devRail) string {
	phrases := make([]string, len(rails))
	for i, r := range rails {
		phrases[i] = r.phrase
	}
	if len(phrases) <= 1 {
		return strings.Join(phrases, "")
	}
	return strings.Join(phrases[:len(phrases)-1], ", ") + " and " + phrases[len(phrases)-1]
}

// dataPhrase says where the data is and whether it outlives this run.
func dataPhrase(b devBanner) string {
	switch {
	case b.resumed:
		return "Data lives in " + b.dataDir + " (DEV_DATA_DIR), resumed: same demo client, keys and balances."
	case b.kept:
		return "Data lives in " + b.dataDir + " (DEV_DATA_DIR) and is kept: a restart resumes it."
	}
	return "Data lives in " + b.dataDir + " and is gone when it stops (set DEV_DATA_DIR to keep it)."
}
