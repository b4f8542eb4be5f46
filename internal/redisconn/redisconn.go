// Package redisconn turns REDIS_URL into the process's one go-redis pool:
// a single Redis server (redis://, rediss://) or a primary found through
// Redis Sentinel (redis-sentinel://), which the pool follows when the
// Sentinels fail it over to a replica.
package redisconn

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// SentinelScheme is the scheme of a Sentinel REDIS_URL:
//
//	redis-sentinel://[[user]:password@]host:port[,host:port...][/db]?master=NAME
//
// The hosts are the Sentinels; master names the primary they watch (their
// `sentinel monitor` name). The user and password are the primary's and
// its replicas' (as in a redis:// URL); Sentinels that require a password
// of their own take it as sentinel_password (and sentinel_username).
const SentinelScheme = "redis-sentinel"

// Open parses raw and returns a pool on it: redis.NewClient for a single
// server, redis.NewFailoverClient for Sentinel. Both are *redis.Client, so
// the rest of the process (asynq, pub/sub, rate limits) never knows which.
func Open(raw string) (*redis.Client, error) {
	if isSentinel(raw) {
		opts, err := ParseSentinel(raw)
		if err != nil {
			return nil, err
		}
		return redis.NewFailoverClient(opts), nil
	}
	opts, err := redis.ParseURL(raw)
	var parseErr *url.Error
	if errors.As(err, &parseErr) {
		// url.Parse's error quotes the whole URL, password included.
		return nil, fmt.Errorf("cannot be parsed: %v", parseErr.Err)
	}
	if err != nil {
		return nil, err
	}
	return redis.NewClient(opts), nil
}

func isSentinel(raw string) bool {
	return strings.HasPrefix(strings.ToLower(raw), SentinelScheme+"://")
}

// ParseSentinel reads a redis-sentinel:// URL (SentinelScheme). Query
// parameters other than master, sentinel_username, sentinel_password and
// tls are refused, so that a misspelt one is not silently ignored.
func ParseSentinel(raw string) (*redis.FailoverOptions, error) {
	u, err := url.Parse(raw)
	if err != nil {
		// url.Parse quotes the whole URL, password included: say only what is wrong.
		return nil, errors.New("redis-sentinel URL: cannot be parsed")
	}
	if !strings.EqualFold(u.Scheme, SentinelScheme) {
		return nil, fmt.Errorf("redis-sentinel URL: scheme %q, want %s://", u.Scheme, SentinelScheme)
	}
	o := &redis.FailoverOptions{}
	if u.User != nil {
		o.Username = u.User.Username()
		o.Password, _ = u.User.Password()
	}
	for _, hostport := range strings.Split(u.Host, ",") {
		host, port, err := net.SplitHostPort(hostport)
		if err != nil || host == "" || port == "" {
			return nil, fmt.Errorf("redis-sentinel URL: Sentinel address %q is not host:port", hostport)
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("redis-sentinel URL: Sentinel address %q has no valid port", hostport)
		}
		o.SentinelAddrs = append(o.SentinelAddrs, hostport)
	}
	switch path := strings.Trim(u.Path, "/"); {
	case path == "":
	case strings.Contains(path, "/"):
		return nil, fmt.Errorf("redis-sentinel URL: path %q is not a database number", u.Path)
	default:
		db, err := strconv.Atoi(path)
		if err != nil || db < 0 {
			return nil, fmt.Errorf("redis-sentinel URL: path %q is not a database number", u.Path)
		}
		o.DB = db
	}
	q := u.Query()
	for name := range q {
		switch name {
		case "master", "sentinel_username", "sentinel_password", "tls":
		default:
			return nil, fmt.Errorf("redis-sentinel URL: unknown parameter %q (known: master, sentinel_username, sentinel_password, tls)", name)
		}
	}
	o.MasterName = q.Get("master")
	if o.MasterName == "" {
		return nil, errors.New("redis-sentinel URL: master=<name> is required (the name the Sentinels monitor the primary by)")
	}
	o.SentinelUsername, o.SentinelPassword = q.Get("sentinel_username"), q.Get("sentinel_password")
	switch q.Get("tls") {
	case "", "false":
	case "true":
		o.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	default:
		return nil, fmt.Errorf("redis-sentinel URL: tls=%q, want true or false", q.Get("tls"))
	}
	return o, nil
}
