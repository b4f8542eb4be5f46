package models

import (
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/google/uuid"
)

// ClientKind says whether a client may call the API.
type ClientKind string

const (
	// KindMerchant clients use the payment and payout API.
	KindMerchant ClientKind = "merchant"
	// KindHolding clients own wallets but are refused by the API (403).
	KindHolding ClientKind = "holding"
)

// Environment is production or staging; credentials of one do not work on
// the other.
type Environment string

const (
	Production Environment = "production"
	Staging    Environment = "staging"
)

// ParseEnvironment accepts "production" or "staging".
func ParseEnvironment(s string) (Environment, error) {
	switch Environment(s) {
	case Production, Staging:
		return Environment(s), nil
	}
	return "", fmt.Errorf("environment must be production or staging, not %q", s)
}

// WithdrawalState says whether a client may create disbursements.
type WithdrawalState string

const (
	WithdrawalsActive    WithdrawalState = "active"
	WithdrawalsSuspended WithdrawalState = "suspended"
)

// TransferType is the payout network of a disbursement.
type TransferType string

const (
	BIFAST TransferType = "BIFAST"
	RTOL   TransferType = "RTOL"
)

// Fee and minimum defaults (docs/design.md, Fees and minimums); each client
// can override them.
var (
	DefaultPaymentFeeBps = int64(70) // 0.7 %
	DefaultBIFASTFee     = Rupiah(2_500)
	DefaultRTOLFee       = Rupiah(6_500)
	DefaultBIFASTMinNet  = Rupiah(10_000)
	DefaultRTOLMinNet    = Rupiah(10_000)
)

// Client is a merchant or holding company using the service.
type Client struct {
	ID          uuid.UUID   `gorm:"type:uuid;primaryKey"`
	Name        string      `gorm:"not null"`
	Kind        ClientKind  `gorm:"not null"`
	Environment Environment `gorm:"not null"`
	AllowedIPs  string      `gorm:"column:allowed_ips;not null"` // comma-separated CIDRs; empty allows any
	// The webhook URLs are stored sealed (credentials.Sealer, bound to the
	// client and the field) in the *Enc columns; PayoutWebhookURL and
	// PaymentWebhookURL hold only their display form (scheme://host/…), ""
	// when none is set. A row of an earlier version has its plain URL there
	// and an empty *Enc until `payoutd admin secrets rotate-key` seals it.
	PayoutWebhookURL     string          `gorm:"not null"`
	PaymentWebhookURL    string          `gorm:"not null"`
	PayoutWebhookURLEnc  string          `gorm:"column:payout_webhook_url_enc;not null"`
	PaymentWebhookURLEnc string          `gorm:"column:payment_webhook_url_enc;not null"`
	Withdrawals          WithdrawalState `gorm:"not null"`
	PaymentFeeBps        int64           `gorm:"not null"`
	BIFASTFee            Amount          `gorm:"column:bifast_fee;not null"`
	RTOLFee              Amount          `gorm:"column:rtol_fee;not null"`
	BIFASTMinNet         Amount          `gorm:"column:bifast_min_net;not null"`
	RTOLMinNet           Amount          `gorm:"column:rtol_min_net;not null"`
	ReviewThreshold      *Amount         // nil: review off
	// RefundFeeOnReturn: when the bank returns a paid payout, the platform
	// fee is credited back too (default false: the fee is kept).
	RefundFeeOnReturn bool `gorm:"not null"`
	// RequireSignatureV2: signed requests of this client must carry a v2
	// signature (method, path, Idempotency-Key and body covered); a v1
	// signature is refused. Unsigned reads with x-timestamp still pass.
	RequireSignatureV2 bool `gorm:"column:require_signature_v2;not null"`
	// WriteRateLimit and ReadRateLimit are the client's own requests per
	// second on the merchant routes; nil: the service's default
	// (CLIENT_WRITE_RATE_LIMIT, CLIENT_READ_RATE_LIMIT); 0: unlimited.
	WriteRateLimit *int
	ReadRateLimit  *int
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

// IPAllowed reports whether ip may call the API for this client. An empty
// allow-list allows every address.
func (c *Client) IPAllowed(ip netip.Addr) bool {
	if strings.TrimSpace(c.AllowedIPs) == "" {
		return true
	}
	prefixes, err := ParseCIDRList(c.AllowedIPs)
	if err != nil {
		return false // a corrupt list fails closed
	}
	ip = ip.Unmap()
	for _, p := range prefixes {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// ParseCIDRList parses "10.0.0.0/8, 203.0.113.7" into prefixes. A bare
// address is a single-host prefix.
func ParseCIDRList(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if !strings.Contains(part, "/") {
			addr, err := netip.ParseAddr(part)
			if err != nil {
				return nil, fmt.Errorf("invalid IP or CIDR %q", part)
			}
			addr = addr.Unmap()
			out = append(out, netip.PrefixFrom(addr, addr.BitLen()))
			continue
		}
		p, err := netip.ParsePrefix(part)
		if err != nil {
			return nil, fmt.Errorf("invalid IP or CIDR %q", part)
		}
		// Callers' addresses are compared as plain IPv4, so an IPv4-mapped
		// range (::ffff:10.0.0.0/104) is stored as the IPv4 range it means.
		if p.Addr().Is4In6() {
			if p.Bits() < 96 {
				return nil, fmt.Errorf("invalid IP or CIDR %q: an IPv4-mapped range needs a prefix of at least 96 bits", part)
			}
			p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// NormalizeCIDRList validates a list and returns its canonical text.
func NormalizeCIDRList(s string) (string, error) {
	prefixes, err := ParseCIDRList(s)
	if err != nil {
		return "", err
	}
	parts := make([]string, len(prefixes))
	for i, p := range prefixes {
		parts[i] = p.String()
	}
	return strings.Join(parts, ","), nil
}

// Credential is a client's API key (stored only as a hash) with its signing
// and callback secrets (stored encrypted). One credential per client is
// active; rotation revokes it and issues a new one.
type Credential struct {
	ID                uuid.UUID `gorm:"type:uuid;primaryKey"`
	ClientID          uuid.UUID `gorm:"type:uuid;not null"`
	APIKeyHash        string    `gorm:"column:api_key_hash;not null"`
	APIKeyPrefix      string    `gorm:"column:api_key_prefix;not null"`
	SigningSecretEnc  *string   // nil when the client has no signing secret yet
	CallbackSecretEnc string    `gorm:"not null"`
	CreatedAt         time.Time
	RevokedAt         *time.Time
}
