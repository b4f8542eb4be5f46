package models

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strings"

	"github.com/shopspring/decimal"
)

// Amount is an exact amount of IDR in ten-thousandths of a rupiah (scale 4).
// 1 IDR is Amount(10000). It is what the database stores (BIGINT).
type Amount int64

// AmountScale is the number of fraction digits an Amount keeps.
const AmountScale = 4

// unitsPerRupiah is 10^AmountScale.
const unitsPerRupiah = 10000

// MaxAmount is the largest absolute amount the service accepts: 10^14 IDR.
// Far below the int64 range, so sums of many amounts cannot overflow.
const MaxAmount = Amount(100_000_000_000_000 * unitsPerRupiah)

// Rupiah returns the Amount of n whole rupiah.
func Rupiah(n int64) Amount { return Amount(n * unitsPerRupiah) }

// Errors of ParseAmount; each message is safe to show to a client.
var (
	errAmountEmpty       = errors.New("must not be empty")
	errAmountSyntax      = errors.New("must be a decimal string such as \"100000\" or \"100000.50\"")
	errAmountScale       = fmt.Errorf("must have at most %d fraction digits", AmountScale)
	errAmountRange       = errors.New("must not exceed 100000000000000")
	errAmountNotPositive = errors.New("must be greater than zero")
)

// Plain decimal: digits, an optional fraction; no sign, exponent, spaces or
// thousands separators. The fraction length is checked separately so the
// error can say why.
var (
	unsignedDecimal = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?$`)
	signedDecimal   = regexp.MustCompile(`^[+-]?[0-9]+(\.[0-9]+)?$`)
)

// ParsePositiveAmount parses a client-supplied amount such as "100000" or
// "100000.50": a plain decimal string greater than zero with at most 4
// fraction digits and at most 10^14. The error says what is wrong and is safe
// to show to the client.
func ParsePositiveAmount(s string) (Amount, error) {
	a, err := parseAmount(s, unsignedDecimal)
	if err != nil {
		return 0, err
	}
	if a <= 0 {
		return 0, errAmountNotPositive
	}
	return a, nil
}

// ParseSignedAmount parses an amount that may carry a leading sign, as
// operators give to wallet adjustments ("-2500", "+100000.5"). Zero is
// refused: an adjustment of nothing is a mistake.
func ParseSignedAmount(s string) (Amount, error) {
	a, err := parseAmount(s, signedDecimal)
	if err != nil {
		return 0, err
	}
	if a == 0 {
		return 0, errors.New("must not be zero")
	}
	return a, nil
}

func parseAmount(s string, syntax *regexp.Regexp) (Amount, error) {
	if s == "" {
		return 0, errAmountEmpty
	}
	// Long inputs are refused before any parsing work: 15 integer digits,
	// a point, 4 fraction digits and a sign fit in 21 bytes.
	if len(s) > 64 || !syntax.MatchString(s) {
		return 0, errAmountSyntax
	}
	if dot := strings.IndexByte(s, '.'); dot >= 0 && len(s)-dot-1 > AmountScale {
		return 0, errAmountScale
	}
	d, err := decimal.NewFromString(s)
	if err != nil {
		return 0, errAmountSyntax
	}
	units := d.Shift(AmountScale)
	if units.Abs().GreaterThan(decimal.NewFromInt(int64(MaxAmount))) {
		return 0, errAmountRange
	}
	return Amount(units.IntPart()), nil
}

// Decimal returns the amount as an exact decimal in rupiah.
func (a Amount) Decimal() decimal.Decimal {
	return decimal.New(int64(a), -AmountScale)
}

// String renders the amount in rupiah without trailing zeros: "100000",
// "2500.5", "-12". This is the form of amounts in API answers and webhooks.
func (a Amount) String() string { return a.Decimal().String() }

// Fixed4 renders the amount with exactly 4 fraction digits, the form the spec
// requires for wallet balances: "100000.0000".
func (a Amount) Fixed4() string { return a.Decimal().StringFixed(AmountScale) }

// PercentBps returns bps basis points (1/100 of a percent) of a, rounded to
// whole rupiah with halves away from zero (up, for the payment fee, which is
// never negative).
func (a Amount) PercentBps(bps int64) Amount {
	fee := a.Decimal().Mul(decimal.NewFromInt(bps)).Div(decimal.NewFromInt(10000))
	return Amount(fee.Round(0).Shift(AmountScale).IntPart())
}

// MaxBalance is the largest absolute balance a wallet may hold (and the
// largest lock): 10^14 IDR, the same bound as MaxAmount. A settlement or
// adjustment that would pass it is refused (ErrBalanceLimit); the database
// enforces it too (migration 00007). At 10^18 units it leaves int64 room
// for any single sum of two balances or a balance and an amount.
const MaxBalance = MaxAmount

// Add returns a+b, or ErrAmountOverflow when the result is beyond the
// int64 range. Every sum the ledger and settlement compute goes through
// Add, Sub or Neg, so corrupt or hostile data is refused, never wrapped.
func (a Amount) Add(b Amount) (Amount, error) {
	if (b > 0 && a > math.MaxInt64-b) || (b < 0 && a < math.MinInt64-b) {
		return 0, ErrAmountOverflow
	}
	return a + b, nil
}

// Sub returns a-b, or ErrAmountOverflow as Add.
func (a Amount) Sub(b Amount) (Amount, error) {
	if (b < 0 && a > math.MaxInt64+b) || (b > 0 && a < math.MinInt64+b) {
		return 0, ErrAmountOverflow
	}
	return a - b, nil
}

// Neg returns -a, or ErrAmountOverflow for the one int64 without a
// negation.
func (a Amount) Neg() (Amount, error) {
	if a == math.MinInt64 {
		return 0, ErrAmountOverflow
	}
	return -a, nil
}

// IsWholeRupiah reports whether a has no fraction of a rupiah: what every
// Indonesian payout rail moves.
func (a Amount) IsWholeRupiah() bool { return a%unitsPerRupiah == 0 }

// WithinBalanceRange reports whether a is a balance a wallet may hold.
func (a Amount) WithinBalanceRange() bool { return a >= -MaxBalance && a <= MaxBalance }
