package snap

import (
	"testing"

	"github.com/payoutd/payoutd/internal/testenv"
)

// The bank's client, unless given one, keeps a burst of calls' connections
// for the next (with Go's default client, 14 of 16 were new each burst:
// a TLS handshake each, to a real bank).
func TestDefaultClientKeepsABurstsConnections(t *testing.T) {
	key := loadTestKey(t)
	v, err := New(Options{Bank: "bca", BaseURL: "https://bank.example", PartnerID: "P", ClientKey: "K", ClientSecret: "S",
		ChannelID: "1", SourceAccountNo: "8880001111", PrivateKey: key})
	if err != nil {
		t.Fatal(err)
	}
	bank := testenv.NewBurst(t, 16)
	if n := bank.Send(t, v.o.HTTPClient); n != 16 {
		t.Fatalf("first burst opened %d connections, want 16", n)
	}
	if n := bank.Send(t, v.o.HTTPClient); n != 0 {
		t.Errorf("second burst opened %d new connections, want 0", n)
	}
}
