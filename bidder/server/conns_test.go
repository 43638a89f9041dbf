package server

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rtbd/rtbd/bidder"
)

// rawConn is a client connection that speaks HTTP/1.1 by hand, so that a
// test decides when it sends and reads (and keeps it open, idle).
type rawConn struct {
	c  net.Conn
	br *bufio.Reader
}

func dialRaw(addr string) (*rawConn, error) {
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return nil, err
	}
	return &rawConn{c: c, br: bufio.NewReader(c)}, nil
}

// bidRequest is a POST of body to PathBid, as raw bytes.
func bidRequest(body []byte) []byte {
	return append(fmt.Appendf(nil, "POST %s HTTP/1.1\r\nHost: bidder\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", bidder.PathBid, len(body)), body...)
}

// do writes req and reads one response (its body read whole), within 10s.
func (r *rawConn) do(req []byte) (status int, closed bool, err error) {
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

// eof reports whether the server has closed the connection (the next read
// ends, within 10s, with EOF and nothing more).
func (r *rawConn) eof() error {
	r.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, err := r.br.Read(make([]byte, 1))
	if n == 0 && errors.Is(err, io.EOF) {
		return nil
	}
	return fmt.Errorf("after the 503: read %d bytes, %v (want EOF)", n, err)
}

// floodResult counts what connection attempts got.
type floodResult struct {
	rejected, served, failed atomic.Int64
	mu                       sync.Mutex
	firstErr                 error
}

func (f *floodResult) fail(err error) {
	f.failed.Add(1)
	f.mu.Lock()
	if f.firstErr == nil {
		f.firstErr = err
	}
	f.mu.Unlock()
}

// flood makes n connection attempts, workers at a time: each sends req and
// must read a 503 with Connection: close and then the connection's end.
// An attempt that is served instead (200 or 204) counts as served; every
// other outcome fails.
func flood(addr string, req []byte, n, workers int) *floodResult {
	var res floodResult
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(n) {
				c, err := dialRaw(addr)
				if err != nil {
					res.fail(err)
					continue
				}
				st, closed, err := c.do(req)
				switch {
				case err != nil:
					res.fail(fmt.Errorf("attempt: %w", err))
				case st == 200 || st == 204:
					res.served.Add(1)
				case st != 503 || !closed:
					res.fail(fmt.Errorf("attempt: status %d, Connection: close %v (want 503 and close)", st, closed))
				default:
					if err := c.eof(); err != nil {
						res.fail(err)
					} else {
						res.rejected.Add(1)
					}
				}
				c.c.Close()
			}
		}()
	}
	wg.Wait()
	return &res
}

// metricNumber is the value of the sample name (with its labels) in a
// Prometheus text exposition, -1 when absent.
func metricNumber(text, name string) float64 {
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` (\S+)$`).FindStringSubmatch(text)
	if m == nil {
		return -1
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	return v
}

// 4,000 connection attempts against a bidder with bidder.max_conns 200:
// 200 connections are held (idle, kept alive), every other attempt reads a
// 503 and the connection's end, the held ones still bid meanwhile, the
// metrics count both, and a connection closed frees its place.
func TestMaxConnsHoldsThenRejects(t *testing.T) {
	const maxConns, attempts = 200, 4_000
	cfg := testConfig(t)
	cfg.Bidder.MaxConns = maxConns
	cfg.Bidder.AccessLogSample = 0
	s := startWithBulkUser(t, cfg)
	req := bidRequest(withUser(t, readFile(t, filepath.Join(specDir, "request-1-simple-banner.json")), userBulk))
	// A bid or a no-bid (the deadline, on a loaded machine) is an answer.
	bidOn := func(c *rawConn) {
		t.Helper()
		if st, closed, err := c.do(req); err != nil || (st != 200 && st != 204) || closed {
			t.Fatalf("bid on a held connection: status %d, closed %v, %v", st, closed, err)
		}
	}
	held := make([]*rawConn, maxConns)
	for i := range held {
		c, err := dialRaw(s.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer c.c.Close()
		bidOn(c)
		held[i] = c
	}
	// The rest of the attempts, with bids on the held connections meanwhile.
	stop := make(chan struct{})
	bids := make(chan int, 1)
	go func() {
		n := 0
		defer func() { bids <- n }()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			c := held[i%len(held)]
			if st, _, err := c.do(req); err != nil || (st != 200 && st != 204) {
				t.Errorf("bid %d on a held connection during the flood: status %d, %v", n, st, err)
				return
			}
			n++
		}
	}()
	res := flood(s.Addr(), req, attempts-maxConns, 16)
	close(stop)
	answered := <-bids
	if res.failed.Load() > 0 || res.served.Load() > 0 || res.rejected.Load() != attempts-maxConns {
		t.Fatalf("of %d attempts over max_conns %d: %d rejected (503 and closed), %d served, %d failed (first: %v)",
			attempts-maxConns, maxConns, res.rejected.Load(), res.served.Load(), res.failed.Load(), res.firstErr)
	}
	if answered == 0 {
		t.Fatal("no bid answered on a held connection during the flood")
	}
	t.Logf("%d held, %d rejected, %d bids answered on held connections meanwhile", maxConns, res.rejected.Load(), answered)
	admin := "http://" + s.AdminAddr() + "/metrics"
	_, m := httpDo(t, "GET", admin, nil)
	if got := metricNumber(string(m), "rtbd_bidder_conns_rejected_total"); got != attempts-maxConns {
		t.Errorf("rtbd_bidder_conns_rejected_total %v, want %d", got, attempts-maxConns)
	}
	if got := metricNumber(string(m), "rtbd_bidder_conns_open"); got != maxConns {
		t.Errorf("rtbd_bidder_conns_open %v, want %d", got, maxConns)
	}
	// Every held connection still bids; one closed frees a place.
	for _, c := range held {
		bidOn(c)
	}
	held[0].c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := dialRaw(s.Addr())
		if err != nil {
			t.Fatal(err)
		}
		st, _, err := c.do(req)
		c.c.Close()
		if err == nil && (st == 200 || st == 204) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a new connection after one held was closed: status %d, %v", st, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
