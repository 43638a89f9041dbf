package bidder

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/procfs"

	"github.com/rtbd/rtbd/bidder/internal/biddertest"
	"github.com/rtbd/rtbd/overload"
)

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
	req := biddertest.Post(PathBid, withUser(b, readFile(b, filepath.Join(specDir, "request-1-simple-banner.json")), userBulk))
	answered := func(st int, err error) bool { return err == nil && (st == 200 || st == 204) }
	for range 4 {
		c, err := biddertest.Dial(child.addr)
		if err != nil {
			b.Fatal(err)
		}
		for range 100 {
			if st, _, err := c.Do(req); !answered(st, err) {
				b.Fatalf("warm-up bid: %d %v", st, err)
			}
		}
		c.Close()
	}
	time.Sleep(time.Second)
	rss0 := rss()

	held := make([]*biddertest.RawConn, conns)
	for i := range held {
		c, err := biddertest.Dial(child.addr)
		if err != nil {
			b.Fatalf("connection %d: %v", i, err)
		}
		defer c.Close()
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
				if st, _, err := held[i].Do(req); !answered(st, err) {
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
			if st, _, err := held[i%len(held)].Do(req); answered(st, err) {
				ok++
			} else {
				bad++
			}
		}
	}()
	res := biddertest.Flood(child.addr, req, max(attempts-conns, 0), 16)
	close(stop)
	during := <-bids
	rss3 := rss()
	per := func(after uint64) float64 { return float64(int64(after)-int64(rss0)) / float64(conns) / 1024 }
	line := fmt.Sprintf("CONNS max_conns=%d held=%d first-bid-failed=%d attempts=%d refused=%d served-over-max=%d failed=%d (first: %v) bids-during=%d bids-during-failed=%d "+
		"VmRSS warm=%d kB idle-new=%d kB idle-after-a-bid=%d kB after-flood=%d kB per-conn idle-new=%.1f KiB idle-after-a-bid=%.1f KiB",
		overload.DefaultMaxConns, conns, failedFirst.Load(), attempts, res.Rejected.Load(), res.Served.Load(), res.Failed.Load(), res.FirstErr(), during[0], during[1],
		rss0>>10, rss1>>10, rss2>>10, rss3>>10, per(rss1), per(rss2))
	b.Log(line)
	fmt.Println(line)
	b.ReportMetric(per(rss2)*1024, "idle-conn-bytes")
}
