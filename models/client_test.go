package models

import (
	"net/netip"
	"testing"
)

func TestClientIPAllowed(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		allowed string
		ip      string
		want    bool
	}{
		{"empty list allows all v4", "", "203.0.113.7", true},
		{"empty list allows all v6", "", "2001:db8::1", true},
		{"blank list allows all", "  ", "198.51.100.1", true},
		{"inside CIDR", "10.0.0.0/8", "10.1.2.3", true},
		{"outside CIDR", "10.0.0.0/8", "11.0.0.1", false},
		{"bare IP is a single host", "203.0.113.7", "203.0.113.7", true},
		{"bare IP is not its /24", "203.0.113.7", "203.0.113.8", false},
		{"second entry", "10.0.0.0/8, 203.0.113.7", "203.0.113.7", true},
		{"spaces around entries", " 10.0.0.0/8 ,  192.168.0.0/16 ", "192.168.44.1", true},
		{"none of the entries", "10.0.0.0/8,192.168.0.0/16", "172.16.0.1", false},
		{"IPv4-mapped caller matches v4 CIDR", "10.0.0.0/8", "::ffff:10.0.0.1", true},
		{"IPv4-mapped caller outside v4 CIDR", "10.0.0.0/8", "::ffff:11.0.0.1", false},
		{"IPv4-mapped caller matches bare v4", "10.0.0.1", "::ffff:10.0.0.1", true},
		{"mapped bare entry matches v4 caller", "::ffff:10.0.0.1", "10.0.0.1", true},
		{"mapped range matches v4 caller", "::ffff:10.0.0.0/104", "10.0.0.1", true},
		{"mapped range matches mapped caller", "::ffff:10.0.0.0/104", "::ffff:10.9.9.9", true},
		{"mapped range excludes others", "::ffff:10.0.0.0/104", "11.0.0.1", false},
		{"v6 CIDR", "2001:db8::/32", "2001:db8:1::5", true},
		{"v6 CIDR, other v6", "2001:db8::/32", "2001:db9::5", false},
		{"v6 list refuses v4", "2001:db8::/32", "10.0.0.1", false},
		{"v4 list refuses v6", "10.0.0.0/8", "2001:db8::1", false},
		{"host bits in CIDR are masked", "10.1.2.3/8", "10.200.0.1", true},
		{"corrupt list fails closed", "10.0.0.0/8,not-an-ip", "10.0.0.1", false},
		{"/0 allows all v4", "0.0.0.0/0", "8.8.8.8", true},
		{"/32 exact", "192.0.2.1/32", "192.0.2.1", true},
		{"/32 neighbour", "192.0.2.1/32", "192.0.2.2", false},
	}
	for _, tt := range tests {
		c := &Client{AllowedIPs: tt.allowed}
		ip := netip.MustParseAddr(tt.ip)
		if got := c.IPAllowed(ip); got != tt.want {
			t.Errorf("%s: AllowedIPs %q, IPAllowed(%s) = %v, want %v", tt.name, tt.allowed, tt.ip, got, tt.want)
		}
	}
}

// An invalid (zero) address never passes a non-empty allow-list.
func TestClientIPAllowedZeroAddr(t *testing.T) {
	t.Parallel()
	c := &Client{AllowedIPs: "0.0.0.0/0"}
	if c.IPAllowed(netip.Addr{}) {
		t.Error("IPAllowed(zero Addr) = true with a non-empty list, want false")
	}
}

func TestParseCIDRList(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{" , ,", nil},
		{"10.0.0.0/8", []string{"10.0.0.0/8"}},
		{"203.0.113.7", []string{"203.0.113.7/32"}},
		{"2001:db8::1", []string{"2001:db8::1/128"}},
		{"::ffff:10.0.0.1", []string{"10.0.0.1/32"}},
		{"10.1.2.3/8", []string{"10.0.0.0/8"}},
		{"10.0.0.0/8, 203.0.113.7", []string{"10.0.0.0/8", "203.0.113.7/32"}},
	}
	for _, tt := range tests {
		got, err := ParseCIDRList(tt.in)
		if err != nil {
			t.Errorf("ParseCIDRList(%q) error %v", tt.in, err)
			continue
		}
		if len(got) != len(tt.want) {
			t.Errorf("ParseCIDRList(%q) = %v, want %v", tt.in, got, tt.want)
			continue
		}
		for i := range got {
			if got[i].String() != tt.want[i] {
				t.Errorf("ParseCIDRList(%q)[%d] = %s, want %s", tt.in, i, got[i], tt.want[i])
			}
		}
	}
}

func TestParseCIDRListRefusesInvalid(t *testing.T) {
	t.Parallel()
	for _, in := range []string{
		"not-an-ip",
		"10.0.0.0/8,bogus",
		"10.0.0.0/33",
		"2001:db8::/129",
		"10.0.0/8",
		"256.0.0.1",
		"10.0.0.1/",
		"/8",
		"10.0.0.0/-1",
		"10.0.0.0 /8",
		"10.0.0.1;10.0.0.2",
		"example.com",
	} {
		if got, err := ParseCIDRList(in); err == nil {
			t.Errorf("ParseCIDRList(%q) = %v, want an error", in, got)
		} else if err.Error() == "" {
			t.Errorf("ParseCIDRList(%q): empty error message", in)
		}
		if got, err := NormalizeCIDRList(in); err == nil {
			t.Errorf("NormalizeCIDRList(%q) = %q, want an error", in, got)
		}
	}
}

func TestNormalizeCIDRList(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"", ""},
		{"  ", ""},
		{"10.0.0.0/8", "10.0.0.0/8"},
		{" 10.0.0.0/8 ,203.0.113.7 ", "10.0.0.0/8,203.0.113.7/32"},
		{"10.1.2.3/8", "10.0.0.0/8"},
		{"::ffff:10.0.0.1", "10.0.0.1/32"},
		{"2001:DB8::1", "2001:db8::1/128"},
		{"10.0.0.0/8,,192.168.0.0/16", "10.0.0.0/8,192.168.0.0/16"},
	}
	for _, tt := range tests {
		got, err := NormalizeCIDRList(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("NormalizeCIDRList(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
			continue
		}
		// Normalising is idempotent.
		again, err := NormalizeCIDRList(got)
		if err != nil || again != got {
			t.Errorf("NormalizeCIDRList(%q) = %q, %v; not idempotent", got, again, err)
		}
	}
}
