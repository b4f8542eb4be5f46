package models

import (
	"errors"
	"math"
	"math/big"
	"strings"
	"testing"
)

// checkClientMessage fails when err's message is not fit to show a client:
// empty, or leaking an error of the Go packages that produced it (strconv's
// "strconv.ParseInt: ...", shopspring/decimal's "can't convert x to decimal"
// or "decimal: ..."). The plain English "must be a decimal string" is fine.
func checkClientMessage(t *testing.T, input string, err error) {
	t.Helper()
	msg := err.Error()
	if strings.TrimSpace(msg) == "" {
		t.Errorf("%q: error message is empty", input)
	}
	for _, leak := range []string{"strconv", "decimal:", "to decimal", "can't convert", "regexp", "panic"} {
		if strings.Contains(strings.ToLower(msg), leak) {
			t.Errorf("%q: error message %q leaks %q", input, msg, leak)
		}
	}
}

func TestParsePositiveAmountAccepts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want Amount
	}{
		{"1", Rupiah(1)},
		{"100000", Rupiah(100_000)},
		{"100000.00", Rupiah(100_000)},
		{"100000.0000", Rupiah(100_000)},
		{"2500.5", Rupiah(2_500) + 5_000},
		{"0.0001", 1},
		{"0.5", 5_000},
		{"00012", Rupiah(12)},
		{"12.3400", Rupiah(12) + 3_400},
		{"100000000000000", MaxAmount},
		{"100000000000000.0000", MaxAmount},
		{"99999999999999.9999", MaxAmount - 1},
	}
	for _, tt := range tests {
		got, err := ParsePositiveAmount(tt.in)
		if err != nil {
			t.Errorf("ParsePositiveAmount(%q) error %v, want %d", tt.in, err, tt.want)
			continue
		}
		if got != tt.want {
			t.Errorf("ParsePositiveAmount(%q) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

func TestParsePositiveAmountScaleInsensitive(t *testing.T) {
	t.Parallel()
	a, err1 := ParsePositiveAmount("100000")
	b, err2 := ParsePositiveAmount("100000.00")
	if err1 != nil || err2 != nil {
		t.Fatalf("errors: %v, %v", err1, err2)
	}
	if a != b {
		t.Errorf("\"100000\" = %d but \"100000.00\" = %d; want the same Amount", a, b)
	}
}

func TestParsePositiveAmountRefuses(t *testing.T) {
	t.Parallel()
	refused := []string{
		"", "0", "0.0", "0.0000", "00", "-1", "-0.5", "+5", "+0",
		"1.00000", "0.00001", "1.12345",
		"1e5", "1E5", "1e-2", "0x10", "1_000",
		" 1", "1 ", " ", "1 000", "\t5", "5\n",
		".5", "5.", ".", "1..2", "1.2.3",
		"NaN", "nan", "Inf", "+Inf", "-Inf", "Infinity",
		"1,000", "1,5", "١٢٣", "５",
		"100000000000000.0001", "100000000000001", "1000000000000000",
		"99999999999999999999999999999999999999999999999999999999999999999999999",
		"abc", "Rp100", "100IDR",
	}
	for _, in := range refused {
		got, err := ParsePositiveAmount(in)
		if err == nil {
			t.Errorf("ParsePositiveAmount(%q) = %d, want an error", in, got)
			continue
		}
		if got != 0 {
			t.Errorf("ParsePositiveAmount(%q) returned %d with its error, want 0", in, got)
		}
		checkClientMessage(t, in, err)
	}
}

// The error names the problem: each class of mistake gets its own message.
func TestParsePositiveAmountErrorSaysWhy(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, wantSubstr string
	}{
		{"", "empty"},
		{"0", "greater than zero"},
		{"1.00000", "4 fraction digits"},
		{"100000000000001", "100000000000000"},
		{"1e5", "decimal"},
	}
	for _, tt := range tests {
		_, err := ParsePositiveAmount(tt.in)
		if err == nil {
			t.Errorf("ParsePositiveAmount(%q): no error", tt.in)
			continue
		}
		if !strings.Contains(err.Error(), tt.wantSubstr) {
			t.Errorf("ParsePositiveAmount(%q) error %q, want it to mention %q", tt.in, err, tt.wantSubstr)
		}
	}
}

func TestParseSignedAmount(t *testing.T) {
	t.Parallel()
	accepted := []struct {
		in   string
		want Amount
	}{
		{"5", Rupiah(5)},
		{"+5", Rupiah(5)},
		{"-2500", Rupiah(-2_500)},
		{"+100000.5", Rupiah(100_000) + 5_000},
		{"-0.0001", -1},
		{"-12.50", Rupiah(-12) - 5_000},
		{"100000000000000", MaxAmount},
		{"-100000000000000", -MaxAmount},
	}
	for _, tt := range accepted {
		got, err := ParseSignedAmount(tt.in)
		if err != nil {
			t.Errorf("ParseSignedAmount(%q) error %v, want %d", tt.in, err, tt.want)
			continue
		}
		if got != tt.want {
			t.Errorf("ParseSignedAmount(%q) = %d, want %d", tt.in, got, tt.want)
		}
	}
	refused := []string{
		"", "0", "-0", "+0", "0.0000", "-0.0",
		"--5", "+-5", "-+5", "- 5", "-", "+",
		"1.00000", "-1.00000", "1e5", "-1e5", ".5", "-.5", "5.", "NaN", "1,000", " 5",
		"100000000000000.0001", "-100000000000000.0001", "-100000000000001",
	}
	for _, in := range refused {
		got, err := ParseSignedAmount(in)
		if err == nil {
			t.Errorf("ParseSignedAmount(%q) = %d, want an error", in, got)
			continue
		}
		checkClientMessage(t, in, err)
	}
}

func TestAmountString(t *testing.T) {
	t.Parallel()
	tests := []struct {
		a    Amount
		want string
	}{
		{0, "0"},
		{Rupiah(100_000), "100000"},
		{Rupiah(2_500) + 5_000, "2500.5"},
		{Rupiah(-12), "-12"},
		{1, "0.0001"},
		{-1, "-0.0001"},
		{Rupiah(12) + 3_400, "12.34"},
		{MaxAmount, "100000000000000"},
	}
	for _, tt := range tests {
		if got := tt.a.String(); got != tt.want {
			t.Errorf("Amount(%d).String() = %q, want %q", int64(tt.a), got, tt.want)
		}
	}
}

func TestAmountFixed4(t *testing.T) {
	t.Parallel()
	tests := []struct {
		a    Amount
		want string
	}{
		{0, "0.0000"},
		{Rupiah(100_000), "100000.0000"},
		{Rupiah(-12) - 5_000, "-12.5000"},
		{1, "0.0001"},
		{-1, "-0.0001"},
		{Rupiah(2_500) + 5_000, "2500.5000"},
		{MaxAmount, "100000000000000.0000"},
		{-MaxAmount, "-100000000000000.0000"},
	}
	for _, tt := range tests {
		if got := tt.a.Fixed4(); got != tt.want {
			t.Errorf("Amount(%d).Fixed4() = %q, want %q", int64(tt.a), got, tt.want)
		}
	}
}

func TestAmountPercentBps(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		price Amount
		bps   int64
		want  Amount
	}{
		{"0.7% of 15000", Rupiah(15_000), 70, Rupiah(105)},
		{"105.497 rounds down", Rupiah(15_071), 70, Rupiah(105)},
		{"105.504 rounds up", Rupiah(15_072), 70, Rupiah(106)},
		// 0.7% of 15500 = 108.5 exactly: half rounds up.
		{"exact half rounds up", Rupiah(15_500), 70, Rupiah(109)},
		// 0.7% of 500 = 3.5 exactly.
		{"small exact half", Rupiah(500), 70, Rupiah(4)},
		// 1% of 50 = 0.5.
		{"half a rupiah", Rupiah(50), 100, Rupiah(1)},
		// 1% of 49.9999 = 0.499999: below the half.
		{"just below half", Rupiah(49) + 9_999, 100, 0},
		// 0.7% of 100000.5 = 700.0035.
		{"fractional price", Rupiah(100_000) + 5_000, 70, Rupiah(700)},
		{"zero bps", Rupiah(15_000), 0, 0},
		{"100%", Rupiah(15_000), 10_000, Rupiah(15_000)},
		{"of zero", 0, 70, 0},
		{"max amount", MaxAmount, 70, Rupiah(700_000_000_000)},
	}
	for _, tt := range tests {
		got := tt.price.PercentBps(tt.bps)
		if got != tt.want {
			t.Errorf("%s: Amount(%s).PercentBps(%d) = %s, want %s", tt.name, tt.price, tt.bps, got, tt.want)
		}
		if got%unitsPerRupiah != 0 {
			t.Errorf("%s: PercentBps = %s is not a whole rupiah", tt.name, got)
		}
	}
}

func TestAmountAdd(t *testing.T) {
	t.Parallel()
	tests := []struct {
		a, b    Amount
		want    Amount
		wantErr bool
	}{
		{Rupiah(1), Rupiah(2), Rupiah(3), false},
		{Rupiah(1), Rupiah(-2), Rupiah(-1), false},
		{MaxAmount, MaxAmount, 2 * MaxAmount, false},
		{math.MaxInt64 - 1, 1, math.MaxInt64, false},
		{math.MinInt64 + 1, -1, math.MinInt64, false},
		{math.MaxInt64, 1, 0, true},
		{1, math.MaxInt64, 0, true},
		{math.MinInt64, -1, 0, true},
		{-1, math.MinInt64, 0, true},
		{math.MaxInt64, math.MaxInt64, 0, true},
		{math.MinInt64, math.MinInt64, 0, true},
		{math.MaxInt64, math.MinInt64, -1, false},
		{0, 0, 0, false},
	}
	for _, tt := range tests {
		got, err := tt.a.Add(tt.b)
		if tt.wantErr {
			if err == nil {
				t.Errorf("Add(%d, %d) = %d, want an overflow error", int64(tt.a), int64(tt.b), int64(got))
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("Add(%d, %d) = %d, %v; want %d", int64(tt.a), int64(tt.b), int64(got), err, int64(tt.want))
		}
	}
}

func FuzzParsePositiveAmount(f *testing.F) {
	for _, s := range []string{
		"1", "100000", "100000.00", "0.0001", "100000000000000", "100000000000000.0001",
		"0", "-1", "+5", "1e5", ".5", "5.", "", "NaN", "1,000", " 1", "1.00000",
		"00000000000000000000000000000000001", "99999999999999.9999",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := ParsePositiveAmount(s)
		if err != nil {
			if a != 0 {
				t.Fatalf("ParsePositiveAmount(%q) = %d with error %v", s, a, err)
			}
			if strings.TrimSpace(err.Error()) == "" {
				t.Fatalf("ParsePositiveAmount(%q): empty error message", s)
			}
			return
		}
		if a <= 0 || a > MaxAmount {
			t.Fatalf("ParsePositiveAmount(%q) = %d, outside (0, MaxAmount]", s, a)
		}
		back, err := ParsePositiveAmount(a.String())
		if err != nil || back != a {
			t.Fatalf("round trip of %q via String %q = %d, %v; want %d", s, a.String(), back, err, a)
		}
		fixed, err := ParsePositiveAmount(a.Fixed4())
		if err != nil || fixed != a {
			t.Fatalf("round trip of %q via Fixed4 %q = %d, %v; want %d", s, a.Fixed4(), fixed, err, a)
		}
		// Only plain decimal strings can be accepted.
		if strings.Trim(s, "0123456789.") != "" {
			t.Fatalf("ParsePositiveAmount(%q) accepted a non-decimal character", s)
		}
	})
}

// FuzzCheckedArithmetic: Add, Sub and Neg agree with exact big-integer
// arithmetic, and answer ErrAmountOverflow exactly when the exact result
// is beyond int64.
func FuzzCheckedArithmetic(f *testing.F) {
	for _, seed := range [][2]int64{{0, 0}, {math.MaxInt64, 1}, {math.MinInt64, -1}, {math.MinInt64, 0},
		{int64(MaxBalance), int64(MaxBalance)}, {-1, math.MaxInt64}, {math.MaxInt64, math.MinInt64}} {
		f.Add(seed[0], seed[1])
	}
	inRange := func(b *big.Int) bool { return b.IsInt64() }
	f.Fuzz(func(t *testing.T, x, y int64) {
		a, b := Amount(x), Amount(y)
		check := func(op string, got Amount, err error, exact *big.Int) {
			if inRange(exact) {
				if err != nil || int64(got) != exact.Int64() {
					t.Fatalf("%s(%d, %d) = %d, %v; want %s", op, x, y, int64(got), err, exact)
				}
			} else if !errors.Is(err, ErrAmountOverflow) {
				t.Fatalf("%s(%d, %d) = %d, %v; want ErrAmountOverflow (exact %s)", op, x, y, int64(got), err, exact)
			}
		}
		sum, err := a.Add(b)
		check("Add", sum, err, new(big.Int).Add(big.NewInt(x), big.NewInt(y)))
		diff, err := a.Sub(b)
		check("Sub", diff, err, new(big.Int).Sub(big.NewInt(x), big.NewInt(y)))
		neg, err := a.Neg()
		check("Neg", neg, err, new(big.Int).Neg(big.NewInt(x)))
	})
}
