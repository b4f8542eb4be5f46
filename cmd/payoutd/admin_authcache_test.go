package main

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/payoutd/payoutd/internal/authcache"
	"github.com/payoutd/payoutd/internal/testenv"
)

// With REDIS_URL set, the commands that change a client announce it, so
// that every API instance drops the client from its cache at once.
func TestAdminAnnouncesClientChanges(t *testing.T) {
	rdb, mr := testenv.Redis(t)
	redisURL := os.Getenv("TEST_REDIS_URL")
	if mr != nil {
		redisURL = "redis://" + mr.Addr()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sub := rdb.Subscribe(ctx, authcache.Channel)
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil { // the subscription's confirmation
		t.Fatal(err)
	}

	c := newCLI(t)
	c.env["REDIS_URL"] = redisURL
	clientID := c.ok("client", "create", "--name", "Toko")["client_id"].(string)
	// Only changes are announced; other processes' tests may share the
	// channel, so messages about other clients are skipped.
	expectAnnounced := func(command string) {
		t.Helper()
		for {
			msg, err := sub.ReceiveMessage(ctx)
			if err != nil {
				t.Fatalf("%s: no announcement of client %s: %v", command, clientID, err)
			}
			if msg.Payload == clientID {
				return
			}
		}
	}
	c.ok("client", "rotate-credentials", "--client", clientID)
	expectAnnounced("rotate-credentials")
	c.ok("client", "update", "--client", clientID, "--withdrawals", "suspended")
	expectAnnounced("client update")

	// A Redis that does not answer leaves the change saved, with a warning.
	c.env["REDIS_URL"] = "redis://127.0.0.1:1/0"
	r := c.run("client", "update", "--client", clientID, "--withdrawals", "active")
	if r.code != 0 || r.json["withdrawals"] != "active" {
		t.Fatalf("update with Redis down: exit %d, %v, stderr %s", r.code, r.json, r.stderr)
	}
	if r.stderr == "" {
		t.Fatal("a change that could not be announced must warn on stderr")
	}
}
