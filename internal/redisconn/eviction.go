package redisconn

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/alicebob/miniredis/v2"
	"github.com/alicebob/miniredis/v2/server"
	"github.com/redis/go-redis/v9"
)

// evictionAdvice says why api and worker refuse a Redis that may evict
// keys, and what to do. Redis holds records that must last until they expire: the
// used-signature records of requests (the first check against a replayed
// signature), asynq's task leases and unique-task locks, the rate-limit
// counters. An allkeys-* or volatile-* policy drops them under memory
// pressure without a word.
const evictionAdvice = "set `maxmemory-policy noeviction` on it (a full Redis then refuses writes, which the service answers with 503s, instead of silently forgetting what it must remember); for a managed Redis that hides CONFIG, check the policy in its console and set REDIS_EVICTION_CHECK=skip"

// CheckNoEviction asks Redis for its maxmemory-policy and returns an
// error unless it is noeviction, or when Redis will not say (CONFIG
// disabled or renamed, as some managed services do). It reports
// unreachable, with the network error, when Redis did not answer at all.
func CheckNoEviction(ctx context.Context, rdb *redis.Client) (unreachable bool, err error) {
	got, err := rdb.ConfigGet(ctx, "maxmemory-policy").Result()
	var redisErr redis.Error
	if err != nil && !errors.As(err, &redisErr) {
		return true, err
	}
	if err != nil {
		return false, fmt.Errorf("cannot read Redis's maxmemory-policy (%v): %s", err, evictionAdvice)
	}
	policy := got["maxmemory-policy"]
	if !strings.EqualFold(policy, "noeviction") {
		if policy == "" {
			policy = "not reported"
		}
		return false, fmt.Errorf("Redis's maxmemory-policy is %s, which may evict keys: %s", policy, evictionAdvice)
	}
	return false, nil
}

// AnswerEvictionPolicy makes an embedded Redis (miniredis, which never
// evicts and knows no CONFIG) answer CONFIG GET maxmemory-policy with
// noeviction, so that a process on it passes CheckNoEviction as it would
// on a real Redis configured for the service.
func AnswerEvictionPolicy(m *miniredis.Miniredis) error {
	return m.Server().Register("CONFIG", func(c *server.Peer, cmd string, args []string) {
		if len(args) == 2 && strings.EqualFold(args[0], "GET") && strings.EqualFold(args[1], "maxmemory-policy") {
			c.WriteMapLen(1)
			c.WriteBulk("maxmemory-policy")
			c.WriteBulk("noeviction")
			return
		}
		c.WriteError("ERR only CONFIG GET maxmemory-policy is answered by the embedded Redis")
	})
}
