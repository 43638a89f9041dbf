package bidder

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/procfs"

	"github.com/rtbd/rtbd/overload"
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
	return append(fmt.Appendf(nil, "POST %s HTTP/1.1\r\nHost: bidder\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", PathBid, len(body)), body...)
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

// BenchmarkConns measures a bidder process (the fixture, served as rtbd
// serves it, with the default bidder.max_conns) under many connections:
// its VmRSS after warm-up, with RTBD_BENCH_CONNS connections (default
// overload.DefaultMaxConns) open and idle before their first request, and again
// after one bid on each (kept alive, idle); then the rest of
// RTBD_BENCH_CONN_ATTEMPTS connection attempts (default 20,000), each
// sending a bid request, while the held connections bid. It prints the
// memory per idle connection, the attempts held, refused (503 and the
// connection's end) and failed, and the bids answered meanwhile; one
// measurement whatever b.N (make bench-conns). The settle pauses are
// fixed: this is a measurement, not a test. BIDDER_BENCH_REDUCE_MEMORY=0
// serves with fasthttp's default buffers kept by idle connections, for
// comparison. The process needs about RTBD_BENCH_CONNS + 100 descriptors
// (Go raises the soft limit to the hard one; ulimit -Hn).
func BenchmarkConns(b *testing.B) {
	envInt := func(k string, def int) int {
		if v, err := strconv.Atoi(os.Getenv(k)); err == nil && v > 0 {
			return v
		}
		return def
	}
	conns, attempts := envInt("RTBD_BENCH_CONNS", overload.DefaultMaxConns), envInt("RTBD_BENCH_CONN_ATTEMPTS", 20_000)
	child := startChild(b, "local")
	proc, err := procfs.NewProc(child.cmd.Process.Pid)
	if err != nil {
		b.Fatal(err)
	}
	rss := func() uint64 {
		st, err := proc.NewStatus()
		if err != nil {
			b.Fatal(err)
		}
		return st.VmRSS
	}
	req := bidRequest(withUser(b, readFile(b, filepath.Join(specDir, "request-1-simple-banner.json")), userBulk))
	answered := func(st int, err error) bool { return err == nil && (st == 200 || st == 204) }
	for range 4 {
		c, err := dialRaw(child.addr)
		if err != nil {
			b.Fatal(err)
		}
		for range 100 {
			if st, _, err := c.do(req); !answered(st, err) {
				b.Fatalf("warm-up bid: %d %v", st, err)
			}
		}
		c.c.Close()
	}
	time.Sleep(time.Second)
	rss0 := rss()

	held := make([]*rawConn, conns)
	for i := range held {
		c, err := dialRaw(child.addr)
		if err != nil {
			b.Fatalf("connection %d: %v", i, err)
		}
		defer c.c.Close()
		held[i] = c
	}
	time.Sleep(2 * time.Second)
	rss1 := rss()
	var next, failedFirst atomic.Int64
	var wg sync.WaitGroup
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1) - 1; i < int64(len(held)); i = next.Add(1) - 1 {
				if st, _, err := held[i].do(req); !answered(st, err) {
					failedFirst.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	time.Sleep(2 * time.Second)
	rss2 := rss()

	stop := make(chan struct{})
	bids := make(chan [2]int, 1)
	go func() {
		ok, bad := 0, 0
		defer func() { bids <- [2]int{ok, bad} }()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			if st, _, err := held[i%len(held)].do(req); answered(st, err) {
				ok++
			} else {
				bad++
			}
		}
	}()
	res := flood(child.addr, req, max(attempts-conns, 0), 16)
	close(stop)
	during := <-bids
	rss3 := rss()
	per := func(after uint64) float64 { return float64(int64(after)-int64(rss0)) / float64(conns) / 1024 }
	line := fmt.Sprintf("CONNS max_conns=%d held=%d first-bid-failed=%d attempts=%d refused=%d served-over-max=%d failed=%d (first: %v) bids-during=%d bids-during-failed=%d "+
		"VmRSS warm=%d kB idle-new=%d kB idle-after-a-bid=%d kB after-flood=%d kB per-conn idle-new=%.1f KiB idle-after-a-bid=%.1f KiB",
		overload.DefaultMaxConns, conns, failedFirst.Load(), attempts, res.rejected.Load(), res.served.Load(), res.failed.Load(), res.firstErr, during[0], during[1],
		rss0>>10, rss1>>10, rss2>>10, rss3>>10, per(rss1), per(rss2))
	b.Log(line)
	fmt.Println(line)
	b.ReportMetric(per(rss2)*1024, "idle-conn-bytes")
}
