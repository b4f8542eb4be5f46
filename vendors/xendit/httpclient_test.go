package xendit

import (
	"testing"

	"github.com/payoutd/payoutd/internal/testenv"
)

// Xendit's client, unless given one, keeps a burst of calls' connections
// for the next (with Go's default client, 14 of 16 were new each burst:
// a TLS handshake each, to api.xendit.co).
func TestDefaultClientKeepsABurstsConnections(t *testing.T) {
	v, err := New(Options{SecretKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	api := testenv.NewBurst(t, 16)
	if n := api.Send(t, v.http); n != 16 {
		t.Fatalf("first burst opened %d connections, want 16", n)
	}
	if n := api.Send(t, v.http); n != 0 {
		t.Errorf("second burst opened %d new connections, want 0", n)
	}
}
