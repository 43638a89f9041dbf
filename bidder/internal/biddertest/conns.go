package biddertest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// RawConn is a client connection that speaks HTTP/1.1 by hand, so that a
// test decides when it sends and reads (and keeps it open, idle).
type RawConn struct {
	c  net.Conn
	br *bufio.Reader
}

// Dial connects to addr within 10s.
func Dial(addr string) (*RawConn, error) {
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return nil, err
	}
	return &RawConn{c: c, br: bufio.NewReader(c)}, nil
}

// Close closes the connection.
func (r *RawConn) Close() error { return r.c.Close() }

// Post is a POST of a JSON body to path, as raw bytes.
func Post(path string, body []byte) []byte {
	return append(fmt.Appendf(nil, "POST %s HTTP/1.1\r\nHost: bidder\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", path, len(body)), body...)
}

// Do writes req and reads one response (its body read whole), within 10s.
func (r *RawConn) Do(req []byte) (status int, closed bool, err error) {
	r.c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := r.c.Write(req); err != nil {
		return 0, false, err
	}
	resp, err := http.ReadResponse(r.br, nil)
	if err != nil {
		return 0, false, err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, resp.Close, err
}

// EOF reports whether the server has closed the connection (the next read
// ends, within 10s, with EOF and nothing more).
func (r *RawConn) EOF() error {
	r.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, err := r.br.Read(make([]byte, 1))
	if n == 0 && errors.Is(err, io.EOF) {
		return nil
	}
	return fmt.Errorf("after the 503: read %d bytes, %v (want EOF)", n, err)
}

// FloodResult counts what Flood's connection attempts got.
type FloodResult struct {
	Rejected, Served, Failed atomic.Int64
	mu                       sync.Mutex
	firstErr                 error
}

// FirstErr is the first failed attempt's error.
func (f *FloodResult) FirstErr() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.firstErr
}

func (f *FloodResult) fail(err error) {
	f.Failed.Add(1)
	f.mu.Lock()
	if f.firstErr == nil {
		f.firstErr = err
	}
	f.mu.Unlock()
}

// Flood makes n connection attempts, workers at a time: each sends req and
// must read a 503 with Connection: close and then the connection's end.
// An attempt that is served instead (200 or 204) counts as served; every
// other outcome fails.
func Flood(addr string, req []byte, n, workers int) *FloodResult {
	var res FloodResult
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(n) {
				c, err := Dial(addr)
				if err != nil {
					res.fail(err)
					continue
				}
				st, closed, err := c.Do(req)
				switch {
				case err != nil:
					res.fail(fmt.Errorf("attempt: %w", err))
				case st == 200 || st == 204:
					res.Served.Add(1)
				case st != 503 || !closed:
					res.fail(fmt.Errorf("attempt: status %d, Connection: close %v (want 503 and close)", st, closed))
				default:
					if err := c.EOF(); err != nil {
						res.fail(err)
					} else {
						res.Rejected.Add(1)
					}
				}
				c.Close()
			}
		}()
	}
	wg.Wait()
	return &res
}
