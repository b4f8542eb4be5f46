package webhooks

import (
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/payoutd/payoutd/internal/testenv"
)

func TestGuardAddresses(t *testing.T) {
	t.Parallel()
	production := ProductionGuard([]netip.Prefix{netip.MustParsePrefix("10.20.0.0/16")})
	tests := []struct {
		ip      string
		refused bool
	}{
		{"127.0.0.1", true}, {"127.9.9.9", true}, {"::1", true}, {"::ffff:127.0.0.1", true},
		{"10.0.0.1", true}, {"172.16.5.4", true}, {"192.168.1.1", true}, {"fd00::1", true},
		{"169.254.169.254", true}, {"fe80::1", true}, {"100.64.0.1", true}, {"0.0.0.0", true}, {"::", true},
		{"224.0.0.1", true}, {"ff02::1", true},
		{"8.8.8.8", false}, {"203.0.113.10", false}, {"2001:4860:4860::8888", false},
		{"10.20.3.4", false}, // allowed by configuration
		{"::ffff:10.20.3.4", false},
		// Benchmarking, 198.18.0.0/15.
		{"198.18.0.1", true}, {"198.19.255.255", true}, {"198.17.255.255", false}, {"198.20.0.1", false},
		// NAT64 (64:ff9b::/96) and 6to4 (2002::/16) reach the IPv4 address
		// they carry: refused exactly when it is.
		{"64:ff9b::7f00:1", true}, {"64:ff9b::a9fe:a9fe", true}, {"64:ff9b::c612:1", true}, {"64:ff9b::a00:1", true},
		{"64:ff9b::808:808", false}, {"64:ff9b::a14:304", false}, // 8.8.8.8; 10.20.3.4 is allowed
		{"2002:7f00:1::1", true}, {"2002:a9fe:a9fe::", true}, {"2002:c0a8:101::1", true}, {"2002:6440:1::1", true},
		{"2002:808:808::1", false}, {"2002:cb00:710a::1", false}, // 8.8.8.8, 203.0.113.10
		// Local-use NAT64 (64:ff9b:1::/48) likewise.
		{"64:ff9b:1::7f00:1", true}, {"64:ff9b:1::a00:1", true}, {"64:ff9b:1::808:808", false},
		// "This network", IETF protocol assignments, reserved and broadcast.
		{"0.1.2.3", true}, {"0.255.255.255", true}, {"1.0.0.1", false},
		{"192.0.0.8", true}, {"192.0.0.255", true}, {"192.0.1.1", false},
		{"240.0.0.1", true}, {"255.255.255.255", true}, {"239.255.255.255", true}, {"223.255.255.254", false},
		// IPv4-compatible (::a.b.c.d), Teredo, site-local: never a merchant's endpoint.
		{"::808:808", true}, {"::7f00:1", true}, {"2001:0:4136:e378:8000:63bf:3fff:fdd2", true},
		{"2001:db8::1", false}, {"fec0::1", true}, {"2001:4860::1", false},
	}
	for _, tt := range tests {
		err := production.CheckAddr(netip.MustParseAddr(tt.ip))
		if refused := err != nil; refused != tt.refused {
			t.Errorf("production %s: refused = %v, want %v (%v)", tt.ip, refused, tt.refused, err)
		}
		if err != nil && !errors.Is(err, ErrBlockedDestination) {
			t.Errorf("%s: error %v is not ErrBlockedDestination", tt.ip, err)
		}
		if err := (Guard{}).CheckAddr(netip.MustParseAddr(tt.ip)); err != nil {
			t.Errorf("staging refused %s: %v", tt.ip, err)
		}
	}
}

func TestGuardURLs(t *testing.T) {
	t.Parallel()
	production := ProductionGuard(nil)
	for raw, refused := range map[string]bool{
		"https://merchant.example/hooks": false,
		"http://merchant.example/hooks":  true,
		"ftp://merchant.example/hooks":   true,
		"/relative":                      true,
		"https://":                       true,
	} {
		if err := production.CheckURL(raw); (err != nil) != refused {
			t.Errorf("production CheckURL(%q) = %v, want refused %v", raw, err, refused)
		}
	}
	if err := (Guard{}).CheckURL("http://127.0.0.1:9/x"); err != nil {
		t.Errorf("staging refused http: %v", err)
	}
}

func TestScheduleSpansTheWindow(t *testing.T) {
	t.Parallel()
	s := DefaultSchedule
	id := [16]byte{1, 2, 3}
	var total float64
	n := 1
	for ; ; n++ {
		wait, more := s.After(id, n)
		if !more {
			break
		}
		if wait <= 0 || wait > s.Cap*12/10 {
			t.Fatalf("wait after attempt %d is %s", n, wait)
		}
		total += wait.Hours()
		if n > 100 {
			t.Fatal("the schedule never ends")
		}
	}
	if total < 60 || total > 72 {
		t.Fatalf("%d attempts over %.1f hours, want about three days", n, total)
	}
	first, _ := s.After(id, 1)
	second, _ := s.After(id, 2)
	if second <= first {
		t.Fatalf("waits do not grow: %s then %s", first, second)
	}
	again, _ := s.After(id, 2)
	if again != second {
		t.Fatal("the wait of an attempt is not stable")
	}
}

// A burst of deliveries to one merchant whose backend speaks only
// HTTP/1.1 takes as many connections as deliveries at once; the next
// burst reuses them instead of opening (and, over https, handshaking)
// new ones. With four idle connections kept per host, twelve of the
// second burst's sixteen were new.
func TestDeliveryBurstsReuseTheirConnections(t *testing.T) {
	t.Parallel()
	const burst = 16
	merchant := testenv.NewBurst(t, burst)
	client := (Guard{}).HTTPClient(10 * time.Second)
	if n := merchant.Send(t, client); n != burst {
		t.Fatalf("first burst opened %d connections, want %d (one per delivery under way)", n, burst)
	}
	if n := merchant.Send(t, client); n != 0 {
		t.Errorf("second burst opened %d new connections, want 0: the first burst's were not kept", n)
	}
}
