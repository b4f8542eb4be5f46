package main

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// rawConn is one HTTP/1.1 keep-alive connection used by one worker at a
// time: the request is written and the response read in the worker's own
// goroutine, as wrk does, without net/http's Transport (two goroutines and
// channel hand-offs per connection). On a machine whose cores the server
// shares with the load generator, every microsecond the generator spends
// is taken from the server being measured.
type rawConn struct {
	conn net.Conn
	r    *bufio.Reader
	w    *bufio.Writer
}

// httpSender sends over HTTP/1.1 keep-alive connections, one per worker
// (a pool as large as the workers, so no request waits for a new
// connection after the warm-up). close closes the connections.
func httpSender(concurrency int) (send sendFunc, close func()) {
	pool := make(chan *rawConn, concurrency)
	var mu sync.Mutex
	var all []*rawConn
	dial := func(host string) (*rawConn, error) {
		c, err := net.DialTimeout("tcp", host, 5*time.Second)
		if err != nil {
			return nil, err
		}
		rc := &rawConn{conn: c, r: bufio.NewReaderSize(c, 16<<10), w: bufio.NewWriterSize(c, 16<<10)}
		mu.Lock()
		all = append(all, rc)
		mu.Unlock()
		return rc, nil
	}
	send = func(req *http.Request, want int) (bool, string) {
		var rc *rawConn
		select {
		case rc = <-pool:
		default:
			var err error
			if rc, err = dial(req.URL.Host); err != nil {
				return false, err.Error()
			}
		}
		ok, failure, reusable := rc.roundTrip(req, want)
		if !reusable {
			rc.conn.Close()
			return ok, failure
		}
		select {
		case pool <- rc:
		default:
			rc.conn.Close()
		}
		return ok, failure
	}
	close = func() {
		mu.Lock()
		defer mu.Unlock()
		for _, rc := range all {
			rc.conn.Close()
		}
		all = nil
	}
	return send, close
}

// roundTrip writes req and reads its response whole; reusable is false
// when the connection cannot carry another request.
func (rc *rawConn) roundTrip(req *http.Request, want int) (ok bool, failure string, reusable bool) {
	rc.conn.SetDeadline(time.Now().Add(requestTimeout))
	if err := req.Write(rc.w); err != nil {
		return false, err.Error(), false
	}
	if err := rc.w.Flush(); err != nil {
		return false, err.Error(), false
	}
	resp, err := http.ReadResponse(rc.r, req)
	if err != nil {
		return false, err.Error(), false
	}
	defer resp.Body.Close()
	if resp.StatusCode != want {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		_, err := io.Copy(io.Discard, resp.Body)
		return false, describeFailure(resp.Status, body), err == nil && !resp.Close
	}
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return false, "reading the response: " + err.Error(), false
	}
	return true, "", !resp.Close
}
