package admin

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/payoutd/payoutd/internal/credentials"
	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/webhooks"
)

// ClientRecord is how operator commands show a client. Amounts are decimal
// strings in IDR.
type ClientRecord struct {
	ClientID          string   `json:"client_id"`
	Name              string   `json:"name"`
	Kind              string   `json:"kind"`
	Environment       string   `json:"environment"`
	AllowedIPs        []string `json:"allowed_ips"`
	PayoutWebhookURL  string   `json:"payout_webhook_url"`
	PaymentWebhookURL string   `json:"payment_webhook_url"`
	Withdrawals       string   `json:"withdrawals"`
	PaymentFeeBps     int64    `json:"payment_fee_bps"`
	BIFASTFee         string   `json:"bifast_fee"`
	RTOLFee           string   `json:"rtol_fee"`
	BIFASTMinNet      string   `json:"bifast_min_net"`
	RTOLMinNet        string   `json:"rtol_min_net"`
	ReviewThreshold   *string  `json:"review_threshold"`
	RefundFeeOnReturn bool     `json:"refund_fee_on_return"`
	// RequireSignatureV2: the client's v1 signatures are refused.
	RequireSignatureV2 bool `json:"require_signature_v2"`
	// WriteRateLimit and ReadRateLimit are the client's own requests per
	// second; null: the service's default; 0: unlimited.
	WriteRateLimit *int `json:"write_rate_limit"`
	ReadRateLimit  *int `json:"read_rate_limit"`
}

// toClientRecord shows c; webhook URLs in their display form only
// (operators' terminals and logs keep what commands print). DisplayURL again
// because a row of an earlier version still holds its plain URL.
func toClientRecord(c *models.Client) ClientRecord {
	r := ClientRecord{
		ClientID: c.ID.String(), Name: c.Name, Kind: string(c.Kind), Environment: string(c.Environment),
		AllowedIPs: []string{}, PayoutWebhookURL: webhooks.DisplayURL(c.PayoutWebhookURL), PaymentWebhookURL: webhooks.DisplayURL(c.PaymentWebhookURL),
		Withdrawals: string(c.Withdrawals), PaymentFeeBps: c.PaymentFeeBps,
		BIFASTFee: c.BIFASTFee.String(), RTOLFee: c.RTOLFee.String(),
		BIFASTMinNet: c.BIFASTMinNet.String(), RTOLMinNet: c.RTOLMinNet.String(),
		RefundFeeOnReturn: c.RefundFeeOnReturn, WriteRateLimit: c.WriteRateLimit, ReadRateLimit: c.ReadRateLimit,
		RequireSignatureV2: c.RequireSignatureV2,
	}
	if c.AllowedIPs != "" {
		r.AllowedIPs = strings.Split(c.AllowedIPs, ",")
	}
	if c.ReviewThreshold != nil {
		s := c.ReviewThreshold.String()
		r.ReviewThreshold = &s
	}
	return r
}

// runClientUpdate changes only the settings given on the command line and
// prints the client as it is afterwards.
func runClientUpdate(ctx context.Context, d Deps, fs *flag.FlagSet, args []string) (any, error) {
	raw := fs.String("client", "", "")
	set := map[string]*string{}
	for _, name := range []string{"allowed-ips", "payout-webhook-url", "payment-webhook-url", "withdrawals",
		"review-threshold", "bifast-fee", "rtol-fee", "bifast-min-net", "rtol-min-net", "payment-fee-bps",
		"refund-fee-on-return", "write-rate-limit", "read-rate-limit"} {
		set[name] = fs.String(name, "", "")
	}
	// A switch: --require-signature-v2 alone turns it on,
	// --require-signature-v2=false off.
	requireV2 := "true"
	fs.Var(switchFlag{&requireV2}, "require-signature-v2", "")
	set["require-signature-v2"] = &requireV2
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	id, err := requireID("client", *raw)
	if err != nil {
		return nil, err
	}
	given := map[string]string{}
	fs.Visit(func(f *flag.Flag) {
		if f.Name != "client" {
			given[f.Name] = *set[f.Name]
		}
	})
	if len(given) == 0 {
		return nil, usageError{"nothing to update: give at least one setting"}
	}
	return UpdateClient(ctx, d, id, given)
}

// UpdateClient changes the given settings (named as the flags of client
// update, without dashes: "withdrawals", "review-threshold", ...) and
// returns the client as it is afterwards.
func UpdateClient(ctx context.Context, d Deps, id uuid.UUID, given map[string]string) (*ClientRecord, error) {
	c, err := d.store().FindClient(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := applyClientSettings(d, c, given); err != nil {
		return nil, err
	}
	if err := d.store().SaveClient(ctx, c); err != nil {
		return nil, err
	}
	d.clientChanged(ctx, id)
	r := toClientRecord(c)
	return &r, nil
}

// applyClientSettings sets on c each setting given (flag name without
// its dashes → value), refusing a value that is not one and a name that
// is no setting.
func applyClientSettings(d Deps, c *models.Client, given map[string]string) error {
	for name, value := range given {
		var err error
		switch name {
		case "allowed-ips":
			c.AllowedIPs, err = models.NormalizeCIDRList(value)
		case "payout-webhook-url", "payment-webhook-url":
			// checkWebhookURL names the flag itself.
			if err := checkWebhookURL(d.Env, "--"+name, value); err != nil {
				return err
			}
			setWebhookURL(d.Sealer, c, webhookURLFields[name], value)
		case "withdrawals":
			c.Withdrawals, err = parseWithdrawals(value)
		case "review-threshold":
			c.ReviewThreshold, err = parseReviewThreshold(value)
		case "bifast-fee":
			c.BIFASTFee, err = parseSetting(value)
		case "rtol-fee":
			c.RTOLFee, err = parseSetting(value)
		case "bifast-min-net":
			c.BIFASTMinNet, err = parseSetting(value)
		case "rtol-min-net":
			c.RTOLMinNet, err = parseSetting(value)
		case "payment-fee-bps":
			c.PaymentFeeBps, err = parsePaymentFeeBps(value)
		case "refund-fee-on-return":
			var refund bool
			if refund, err = parseTrueFalse(value); err == nil {
				c.RefundFeeOnReturn = refund
			}
		case "require-signature-v2":
			var require bool
			if require, err = parseTrueFalse(value); err == nil {
				c.RequireSignatureV2 = require
			}
		case "write-rate-limit":
			c.WriteRateLimit, err = parseRateLimit(value)
		case "read-rate-limit":
			c.ReadRateLimit, err = parseRateLimit(value)
		default:
			// A caller's typo must not pass for a saved setting.
			err = fmt.Errorf("unknown setting")
		}
		if err != nil {
			return fmt.Errorf("--%s: %w", name, err)
		}
	}
	return nil
}

// switchFlag is a flag that may be given alone (true) or as
// --name=true|false, kept as text for applyClientSettings to check.
type switchFlag struct{ value *string }

func (f switchFlag) String() string {
	if f.value == nil {
		return ""
	}
	return *f.value
}
func (f switchFlag) Set(s string) error { *f.value = s; return nil }
func (f switchFlag) IsBoolFlag() bool   { return true }

// webhookURLFields are the sealed fields of the webhook URL settings.
var webhookURLFields = map[string]credentials.Field{
	"payout-webhook-url":  credentials.FieldPayoutWebhookURL,
	"payment-webhook-url": credentials.FieldPaymentWebhookURL,
}

func parseWithdrawals(value string) (models.WithdrawalState, error) {
	if value != string(models.WithdrawalsActive) && value != string(models.WithdrawalsSuspended) {
		return models.WithdrawalState(value), fmt.Errorf("must be active or suspended")
	}
	return models.WithdrawalState(value), nil
}

// parseReviewThreshold: "off" or empty turns review off (nil).
func parseReviewThreshold(value string) (*models.Amount, error) {
	if value == "off" || value == "" {
		return nil, nil
	}
	a, err := models.ParsePositiveAmount(value)
	return &a, err
}

// parseRateLimit: "default" (nil: the service's default), or requests per
// second, 0 for unlimited.
func parseRateLimit(value string) (*int, error) {
	if value == "default" {
		return nil, nil
	}
	n, err := strconv.Atoi(value)
	if err != nil || n < 0 || n > 1_000_000 {
		return nil, fmt.Errorf("must be default or a whole number of requests per second from 0 (unlimited) to 1000000")
	}
	return &n, nil
}

func parsePaymentFeeBps(value string) (int64, error) {
	bps, err := strconv.ParseInt(value, 10, 64)
	if err == nil && (bps < 0 || bps > 10000) {
		err = fmt.Errorf("must be from 0 to 10000 basis points")
	}
	return bps, err
}

func parseTrueFalse(value string) (bool, error) {
	switch value {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, fmt.Errorf("must be true or false")
}

// parseSetting accepts a fee or minimum: zero or a positive amount of
// whole rupiah, so that with a whole gross (the API refuses fractions) the
// net sent to the bank is whole too.
func parseSetting(value string) (models.Amount, error) {
	if value == "0" {
		return 0, nil
	}
	a, err := models.ParsePositiveAmount(value)
	if err == nil && !a.IsWholeRupiah() {
		return 0, errors.New("must be a whole number of rupiah")
	}
	return a, err
}
