package bidder

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/valyala/fasthttp"

	"github.com/rtbd/rtbd/bidder/campaign"
	"github.com/rtbd/rtbd/bidder/notice"
	"github.com/rtbd/rtbd/bidder/spend"
	"github.com/rtbd/rtbd/bidder/spend/journal"
	"github.com/rtbd/rtbd/bidder/spend/pebblestore"
	"github.com/rtbd/rtbd/bidder/spend/redisstore"
	"github.com/rtbd/rtbd/bidder/spend/spendtest"
	"github.com/rtbd/rtbd/bidder/token"
	"github.com/rtbd/rtbd/rtb"
	"github.com/rtbd/rtbd/rtb/money"
)

// countingStore wraps a real spend.Store (Redis or Pebble) and counts the
// writes it receives: Flush calls (one store round trip / one write batch
// each) and the deltas they carry.
type countingStore struct {
	spend.Store
	flushes, deltas atomic.Int64
}

func (c *countingStore) Flush(ctx context.Context, d []spend.Delta) ([]spend.Total, error) {
	c.flushes.Add(1)
	c.deltas.Add(int64(len(d)))
	return c.Store.Flush(ctx, d)
}

// BenchmarkWinNotices measures the billing notices (burl: the notice that
// charges spend; /win only verifies and counts) one bidder absorbs per
// second over loopback TCP, from a fasthttp client with 64 connections,
// and the store writes they cause, in two modes on the same notices:
//
//	journaled   the real path: package notice writes each notice to the local
//	            journal (Pebble in a temp dir, fsync per commit group) and
//	            charges spend.Writer.AddNotice, the Writer flushes in
//	            batches (default options: 1s timer, 1000-impression
//	            threshold, 4 flushers)
//	buffered    the same without the journal (the path's cost before it)
//	unbuffered  the baseline: the same handler code (notice.Handler.Serve: token
//	            verification, price, replay set, Writer.AddNotice to a Writer that
//	            never flushes during the phase), then one synchronous
//	            Store.Flush of a one-notice delta per accepted notice, as a
//	            bidder without a buffer would do (one INCRBY script per
//	            notice on Redis, one committed batch on Pebble)
//
// Both write through countingStore around the real store: a redis-server
// started by the benchmark (store=redis), and Pebble in a temp dir
// (store=pebble). The notice URLs are the burls of real bid responses
// (20-imp requests, one bid per imp), built before the timed phases; every
// phase uses a fresh Bidder (fresh replay set) with the same keys, so both
// modes absorb exactly the same notices. A phase sends up to
// noticesPerPhase notices or runs phaseMax, whichever ends first; rounds
// alternate the two modes and the medians are reported, with a third
// reference in each round: bare-204, the same client against a server
// that answers 204 and does nothing (the loopback ceiling of the machine,
// client and server sharing its cores). Each phase also checks that the
// store gained exactly the accepted notices. Writes are
// counted during the timed phase only (the buffered Writer's final Close
// flush is reported apart, as close-writes). CPU is the process's (client
// and server share it) per notice; server-cpu-us/notice subtracts the
// bare-204 phase's CPU per request (the client and loopback part).
//
// Run: go test ./bidder -run '^$' -bench BenchmarkWinNotices -benchtime=1x
func BenchmarkWinNotices(b *testing.B) {
	const (
		noticesPerPhase = 60_000
		phaseMax        = 2 * time.Second
		rounds          = 3
	)
	set := moneyCampaigns(b, "")
	urls := buildBillURLs(b, set, noticesPerPhase)
	b.Run("store=redis", func(b *testing.B) {
		r := spendtest.StartRedis(b, spendtest.RedisOptions{})
		newStore := func() spend.Store {
			rdb := redis.NewClient(&redis.Options{Addr: r.Addr, ContextTimeoutEnabled: true, PoolSize: 64})
			b.Cleanup(func() { rdb.Close() })
			return redisstore.New(rdb, redisstore.Options{Prefix: "bench:"})
		}
		benchNotices(b, set, urls, newStore, rounds, phaseMax)
	})
	b.Run("store=pebble", func(b *testing.B) {
		newStore := func() spend.Store {
			db, err := pebblestore.Open(filepath.Join(b.TempDir(), "spend"), pebblestore.Options{})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { db.Close() })
			return db
		}
		benchNotices(b, set, urls, newStore, rounds, phaseMax)
	})
}

// noticePhase is one timed phase.
type noticePhase struct {
	accepted, failed int64
	elapsed          time.Duration
	writes, deltas   int64 // during the phase
	closeWrites      int64 // the buffered Writer's Close
	cpu              time.Duration
}

// Modes of runNoticePhase.
const (
	modeJournaled = iota
	modeBuffered
	modeUnbuffered
)

var noticeModeNames = []string{"journaled", "buffered", "unbuffered"}

func benchNotices(b *testing.B, set *campaign.Set, urls []string, newStore func() spend.Store, rounds int, phaseMax time.Duration) {
	var rate, wps, npw, cpu, serverCPU [3][]float64
	var speedup, reduction, journalCost, bareRate []float64
	// The loopback ceiling of this machine with this client: a server that
	// answers 204 without looking at the request.
	bare := loopbackServer(b, &fasthttp.Server{Handler: func(rc *fasthttp.RequestCtx) { rc.SetStatusCode(fasthttp.StatusNoContent) }})
	for round := range rounds {
		c0 := cpuTime()
		bp := sendNotices(bare, urls, phaseMax)
		bareCPU := float64(cpuTime()-c0) / float64(time.Microsecond) / float64(max(bp.accepted, 1))
		bareRate = append(bareRate, float64(bp.accepted)/bp.elapsed.Seconds())
		b.Logf("round %d %-10s: %d requests in %v: %.0f/s, %.1f us CPU per request (loopback ceiling: no handler work)",
			round, "bare-204", bp.accepted, bp.elapsed.Round(time.Millisecond), bareRate[round], bareCPU)
		for mode, name := range noticeModeNames {
			p := runNoticePhase(b, set, urls, newStore, mode, phaseMax)
			r := float64(p.accepted) / p.elapsed.Seconds()
			perNotice := float64(p.cpu) / float64(time.Microsecond) / float64(max(p.accepted, 1))
			rate[mode] = append(rate[mode], r)
			wps[mode] = append(wps[mode], float64(p.writes)/p.elapsed.Seconds())
			npw[mode] = append(npw[mode], float64(p.accepted)/float64(max(p.writes, 1)))
			cpu[mode] = append(cpu[mode], perNotice)
			serverCPU[mode] = append(serverCPU[mode], perNotice-bareCPU)
			b.Logf("round %d %-10s: %d notices in %v: %.0f notices/s accepted (%d failed), %.1f us CPU per notice; %d store writes (%d deltas) = %.1f writes/s, %.1f notices per write; close-writes %d",
				round, name, p.accepted, p.elapsed.Round(time.Millisecond), r, p.failed, perNotice, p.writes, p.deltas,
				wps[mode][round], npw[mode][round], p.closeWrites)
			if p.failed > 0 {
				b.Errorf("%s: %d notices not answered 204", name, p.failed)
			}
		}
		speedup = append(speedup, rate[modeBuffered][round]/rate[modeUnbuffered][round])
		reduction = append(reduction, npw[modeBuffered][round]/npw[modeUnbuffered][round])
		journalCost = append(journalCost, rate[modeBuffered][round]/rate[modeJournaled][round])
	}
	reportMedians(b, []series{
		{rate[modeJournaled], "journaled-notices/s"}, {rate[modeBuffered], "buffered-notices/s"}, {rate[modeUnbuffered], "unbuffered-notices/s"},
		{speedup, "speedup-x"}, {journalCost, "journal-slowdown-x"},
		{serverCPU[modeJournaled], "journaled-server-cpu-us/notice"}, {serverCPU[modeBuffered], "buffered-server-cpu-us/notice"},
		{serverCPU[modeUnbuffered], "unbuffered-server-cpu-us/notice"},
		{cpu[modeJournaled], "journaled-cpu-us/notice"}, {cpu[modeBuffered], "buffered-cpu-us/notice"},
		{wps[modeBuffered], "buffered-writes/s"}, {wps[modeUnbuffered], "unbuffered-writes/s"},
		{npw[modeBuffered], "buffered-notices/write"}, {reduction, "fewer-writes-x"}, {bareRate, "bare-204-req/s"},
	})
	b.ReportMetric(0, "ns/op") // the phases are fixed work, not b.N
}

// runNoticePhase starts a fresh bidder on 127.0.0.1 and sends it the
// notices from 64 connections.
func runNoticePhase(b *testing.B, set *campaign.Set, urls []string, newStore func() spend.Store, mode int, phaseMax time.Duration) noticePhase {
	cs := &countingStore{Store: newStore()}
	var w *spend.Writer
	var err error
	var bb *Bidder
	var j *journal.Journal
	buffered := mode != modeUnbuffered
	switch mode {
	case modeJournaled:
		if j, err = journal.Open(filepath.Join(b.TempDir(), "journal"), journal.Options{}); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { j.Close() })
		w, err = spend.NewWriter(cs, spend.Options{Confirmed: j.Confirm})
	case modeBuffered:
		w, err = spend.NewWriter(cs, spend.Options{})
	default:
		// The Writer the handler's Add goes to in the baseline: never
		// flushes during the phase (its store is a separate Pebble, not
		// counted).
		var mem *pebblestore.Store
		mem, err = pebblestore.Open(filepath.Join(b.TempDir(), "mem"), pebblestore.Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { mem.Close() })
		w, err = spend.NewWriter(mem, spend.Options{FlushInterval: time.Hour, ThresholdImps: -1, BudgetFraction: -1})
	}
	if err != nil {
		b.Fatal(err)
	}
	var seq atomic.Int64
	// Delta ids unique per phase too: the stores deduplicate ids.
	idPrefix := "ub" + strconv.FormatInt(time.Now().UnixNano(), 36) + ":"
	f := newFixture(b, func(o *Options) {
		o.Campaigns = staticCampaigns{set}
		o.Keys = benchNoticeKeys(b)
		o.Spend = w
		if j != nil {
			o.Journal = j
		}
		if !buffered {
			o.Notices = func(rc *fasthttp.RequestCtx) { unbufferedNotice(bb, rc, cs, idPrefix, &seq) }
		}
	})
	bb = f.b
	addr := loopbackServer(b, f.b.NewServer())
	day := time.Now().UTC().Format(time.DateOnly)
	before := readMoney(b, cs, day)
	c0 := cpuTime()
	p := sendNotices(addr, urls, phaseMax)
	p.cpu = cpuTime() - c0
	p.writes, p.deltas = cs.flushes.Load(), cs.deltas.Load()
	if err := w.Close(context.Background()); err != nil {
		b.Fatal(err)
	}
	if buffered {
		p.closeWrites = cs.flushes.Load() - p.writes
	}
	// Nothing lost, nothing twice: the store gained exactly the accepted
	// notices (the baseline's per-notice writes, or the buffered Writer's
	// batches including its Close flush).
	if after := readMoney(b, cs, day); after.TotalImps-before.TotalImps != p.accepted && day == time.Now().UTC().Format(time.DateOnly) {
		b.Errorf("store gained %d impressions in the phase, %d notices were accepted", after.TotalImps-before.TotalImps, p.accepted)
	}
	return p
}

func readMoney(b *testing.B, s spend.Store, day string) spend.Total {
	tot, err := s.Read(context.Background(), []string{"money"}, day)
	if err != nil {
		b.Fatal(err)
	}
	return tot[0]
}

// sendNotices sends urls (path and query) to addr from 64 connections
// until all are sent or phaseMax has passed.
func sendNotices(addr string, urls []string, phaseMax time.Duration) noticePhase {
	c := &fasthttp.HostClient{Addr: addr, MaxConns: loopbackConns, ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second,
		MaxIdemponentCallAttempts: 1}
	full := make([]string, len(urls)) // outside the timed part
	for i, u := range urls {
		full[i] = "http://" + addr + u
	}
	var next, accepted, failed atomic.Int64
	stop := time.Now().Add(phaseMax)
	start := time.Now()
	withConns(loopbackConns, func(req *fasthttp.Request, resp *fasthttp.Response) {
		req.Header.SetMethod(fasthttp.MethodGet)
		for time.Now().Before(stop) {
			i := next.Add(1) - 1
			if i >= int64(len(full)) {
				return
			}
			req.SetRequestURI(full[i])
			if err := c.Do(req, resp); err != nil || resp.StatusCode() != fasthttp.StatusNoContent {
				failed.Add(1)
				continue
			}
			accepted.Add(1)
		}
	})
	return noticePhase{elapsed: time.Since(start), accepted: accepted.Load(), failed: failed.Load()}
}

// unbufferedNotice is the baseline handler: the bidder's own notice code,
// then one store write per accepted billing notice (a failed write
// answers 503, unavailable).
func unbufferedNotice(b *Bidder, rc *fasthttp.RequestCtx, store spend.Store, idPrefix string, seq *atomic.Int64) {
	kind := notice.Win
	if string(rc.Path()) == PathBill {
		kind = notice.Bill
	}
	b.notices.Serve(rc, kind)
	if kind != notice.Bill || string(rc.Response.Header.Peek(HeaderNoticeOutcome)) != "accepted" {
		return
	}
	var tok token.Token
	_, err := b.opts.Keys.Parse(&tok, rc.QueryArgs().Peek("t"), token.KindBill, b.opts.Now(), nil)
	price, perr := money.Parse(rc.QueryArgs().Peek("p"))
	if err == nil && perr == nil {
		d := []spend.Delta{{ID: idPrefix + strconv.FormatInt(seq.Add(1), 36), Campaign: tok.Campaign,
			Day: b.opts.Now().UTC().Format(time.DateOnly), Micros: (price + 500) / 1000, Imps: 1}}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err = store.Flush(ctx, d)
		cancel()
	}
	if err != nil || perr != nil {
		rc.Response.Header.Set(HeaderNoticeOutcome, "unavailable")
		rc.SetStatusCode(fasthttp.StatusServiceUnavailable)
	}
}

var benchNoticeKeysOnce = sync.OnceValues(func() (*token.Keys, error) { return token.NewKeys(testKey) })

func benchNoticeKeys(b *testing.B) *token.Keys {
	k, err := benchNoticeKeysOnce()
	if err != nil {
		b.Fatal(err)
	}
	return k
}

// buildBillURLs returns n billing notice URLs (path and query, the
// clearing price filled), the burls of real bid responses of a bidder
// signing with testKey: 20-imp banner requests, one bid per imp.
func buildBillURLs(b *testing.B, set *campaign.Set, n int) []string {
	f := newFixture(b, func(o *Options) {
		o.Campaigns = staticCampaigns{set}
		o.Keys = benchNoticeKeys(b)
		o.NBRBody = true
	})
	h := f.b.Handler()
	imps := make([]map[string]any, 20)
	for i := range imps {
		imps[i] = map[string]any{"id": strconv.Itoa(i + 1), "bidfloor": 0.03, "banner": map[string]any{"w": 300, "h": 250}}
	}
	base := withUser(b, readFile(b, filepath.Join(specDir, "request-1-simple-banner.json")), userBulk, "imp", imps, "tmax", 500)
	var mu sync.Mutex
	urls := make([]string, 0, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	var firstErr atomic.Value
	var misses atomic.Int64
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				done := len(urls) >= n
				mu.Unlock()
				if done || firstErr.Load() != nil {
					return
				}
				body := strings.Replace(string(base), `"id":"80ce30c53c16e6ede735f123ef6e32361bfc7b22"`,
					fmt.Sprintf(`"id":"bench-%d"`, next.Add(1)), 1)
				rc := bidCtx([]byte(body))
				h(rc)
				var resp struct {
					NBR     int `json:"nbr"`
					SeatBid []struct {
						Bid []struct{ BURL string } `json:"bid"`
					} `json:"seatbid"`
				}
				err := json.Unmarshal(rc.Response.Body(), &resp)
				if err == nil && resp.NBR == int(rtb.NoBidDeadline) && misses.Add(1) < 100 {
					continue // a deadline miss on a busy machine: ask again
				}
				if err != nil || len(resp.SeatBid) == 0 {
					firstErr.CompareAndSwap(nil, fmt.Errorf("bid: %d %v %.300s", rc.Response.StatusCode(), err, rc.Response.Body()))
					return
				}
				mu.Lock()
				for _, sb := range resp.SeatBid {
					for _, bd := range sb.Bid {
						u := strings.Replace(strings.TrimPrefix(bd.BURL, f.opts.PublicURL), "${AUCTION_PRICE}", "1.5", 1)
						if len(urls) < n {
							urls = append(urls, u)
						}
					}
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if err := firstErr.Load(); err != nil {
		b.Fatal(err)
	}
	if !strings.HasPrefix(urls[0], PathBill+"?") {
		b.Fatalf("burl %q is not %s?...", urls[0], PathBill)
	}
	return urls
}
