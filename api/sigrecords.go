package api

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/payoutd/payoutd/internal/groupcommit"
	"github.com/payoutd/payoutd/internal/metrics"
)

// signatureRecords sends the once-only records of signatures that arrive
// at the same moment to Redis together, in one pipeline: one write and one
// read on the connection for the group instead of one round trip each.
// Every signed request makes one record, so at a few thousand requests a
// second the round trips, not Redis, were what the API and Redis spent
// their time on (a fifth of the API's CPU per balance read).
// An idle API sends a lone record at once; nothing waits on a timer.
type signatureRecords struct {
	redis *redis.Client
	group groupcommit.Group[*signatureRecord]
}

// signatureRecord is one SET NX GET and its outcome.
type signatureRecord struct {
	key, use string
	first    string // the use already recorded; "" when this one is the first
	err      error  // redis.Nil: nothing was recorded before
}

// maxSignatureRecords is the most records one pipeline carries, and
// signatureRecordLeaders how many pipelines may be out at once: while one
// is, the next group gathers. The second starts only behind a backlog of
// readBusyAt: two pipelines out all the time halved the groups (2.4
// records each at 18k reads/s) and the round trips cost more CPU than the
// wait they saved (23k/s with one, 4 records each).
const maxSignatureRecords, signatureRecordLeaders = 256, 2

// readBusyAt is the backlog at which a second signature pipeline or wallet
// query starts (groupcommit.Group.BusyAt).
const readBusyAt = 16

func newSignatureRecords(rdb *redis.Client, m *metrics.Metrics) *signatureRecords {
	r := &signatureRecords{redis: rdb}
	r.group = groupcommit.Group[*signatureRecord]{MaxLeaders: signatureRecordLeaders, BusyAt: readBusyAt,
		Next: groupcommit.First[*signatureRecord](maxSignatureRecords), Run: r.send,
		Observe: func(size int, took time.Duration) { m.GroupRun("signature_records", size, took) }}
	return r
}

// record stores use under key unless something is stored there already,
// and returns what was (redis.Nil when nothing was). A caller whose ctx
// ends first gets ctx's error; its record may still be written, as a lone
// SET cut off after sending could be.
func (r *signatureRecords) record(ctx context.Context, key, use string) (string, error) {
	rec := &signatureRecord{key: key, use: use}
	if err := r.group.DoContext(ctx, rec); err != nil {
		return "", err
	}
	return rec.first, rec.err
}

// send writes a group's records in one pipeline. Its context is its own,
// bounded like a request: one requester hanging up must not cut the
// others' records.
func (r *signatureRecords) send(group []*groupcommit.Request[*signatureRecord]) {
	ctx, cancel := context.WithTimeout(context.Background(), signatureRecordTimeout)
	defer cancel()
	pipe := r.redis.Pipeline()
	cmds := make([]*redis.StatusCmd, len(group))
	for i, req := range group {
		cmds[i] = pipe.SetArgs(ctx, req.Item.key, req.Item.use, redis.SetArgs{Mode: "NX", Get: true, TTL: signatureMemory})
	}
	_, _ = pipe.Exec(ctx) // each command carries its own error
	for i, req := range group {
		req.Item.first, req.Item.err = cmds[i].Result()
		req.Answer(nil)
	}
}

// signatureRecordTimeout bounds a pipeline of records: a request waits no
// longer than its own deadline anyway.
const signatureRecordTimeout = requestTimeout
