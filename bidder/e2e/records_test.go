package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/valyala/fasthttp"

	"github.com/rtbd/rtbd/bidder"
	"github.com/rtbd/rtbd/catalog/catalogtest"
	"github.com/rtbd/rtbd/records"
	"github.com/rtbd/rtbd/records/report"

	"github.com/rtbd/rtbd/internal/netfaulttest"
)

// The log-level records' acceptance tests. Sizes are kept small for `make
// test`; the environment scales them to the full acceptance runs (make
// test-records-full): RTBD_RECORDS_BIDS (default 2000; 20000),
// RTBD_RECORDS_CUT (the Kafka cut, default 5s; 30s). Kafka is a kfake
// cluster in this test process, or the real cluster of
// RTBD_KAFKA_BROKERS (TestRecordsKafkaCut needs kfake: it cuts the
// connection with a netfaulttest proxy).

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// kafkaCluster is a Kafka for one test: its brokers and a topic prefix of
// its own (a real cluster is shared).
type kafkaCluster struct {
	brokers []string
	prefix  string
}

// startKafka starts kfake (its listeners behind a relay when relayed, so
// that the test can cut the bidder from it), or uses RTBD_KAFKA_BROKERS.
func startKafka(t *testing.T, relayed bool) (*kafkaCluster, *netfaulttest.Proxy) {
	t.Helper()
	k := &kafkaCluster{prefix: fmt.Sprintf("rtbd%d.", time.Now().UnixNano())}
	if b := os.Getenv("RTBD_KAFKA_BROKERS"); b != "" && !relayed {
		k.brokers = strings.Split(b, ",")
		return k, nil
	}
	var rl *netfaulttest.Proxy
	opts := []kfake.Opt{kfake.NumBrokers(1), kfake.AllowAutoTopicCreation(), kfake.DefaultNumPartitions(4)}
	if relayed {
		opts = append(opts, kfake.ListenFn(func(network, addr string) (net.Listener, error) {
			ln, err := net.Listen(network, addr)
			if err != nil {
				return nil, err
			}
			rl = netfaulttest.Start(t, ln.Addr().String())
			return advertised{Listener: ln, addr: rl.ListenAddr()}, nil
		}))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	k.brokers = c.ListenAddrs()
	return k, rl
}

// advertised is a listener that advertises another address (the relay's):
// kfake tells clients the address its listener reports.
type advertised struct {
	net.Listener
	addr net.Addr
}

func (a advertised) Addr() net.Addr { return a.addr }

// nonces reads topic from the start until it holds want distinct keys or
// d passes; it returns the distinct keys and the message count.
func (k *kafkaCluster) nonces(t *testing.T, kind string, want int, d time.Duration) (map[string]bool, int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.brokers...), kgo.ConsumeTopics(k.prefix+kind),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	seen, n := map[string]bool{}, 0
	for len(seen) < want && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			seen[string(r.Key)] = true
			n++
		})
	}
	return seen, n
}

// fileNonces are the distinct nonces of kind in the files under dir, and
// the record count.
func fileNonces(t *testing.T, dir string, k records.Kind) (map[records.Nonce]bool, int) {
	t.Helper()
	seen, n := map[records.Nonce]bool{}, 0
	if err := records.Scan(dir, k, time.Time{}, time.Time{}, func(r *records.Record) error {
		seen[r.Nonce] = true
		n++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return seen, n
}

// fullBid is one bid's URLs.
type fullBid struct {
	nurl, burl, lurl string
	clicks           []string
}

var clickURL = regexp.MustCompile(`https?://[^"'\s]*/click\?t=[A-Za-z0-9_\-]+\.[0-9]+`)

// bidFull sends a bid request and returns its bid for "money" (ok false:
// no bid).
func bidFull(c *fasthttp.Client, addr string, body []byte) (fullBid, int, error) {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI("http://" + addr + bidder.PathBid)
	req.Header.SetMethod(fasthttp.MethodPost)
	req.Header.SetContentType("application/json")
	req.SetBody(body)
	if err := c.DoTimeout(req, resp, 10*time.Second); err != nil {
		return fullBid{}, 0, err
	}
	var br struct {
		NBR     *int `json:"nbr"`
		SeatBid []struct {
			Bid []struct {
				CID              string `json:"cid"`
				NURL, BURL, LURL string
				AdM              string `json:"adm"`
			} `json:"bid"`
		} `json:"seatbid"`
	}
	if resp.StatusCode() == 204 {
		return fullBid{}, -1, nil
	}
	if err := json.Unmarshal(resp.Body(), &br); err != nil {
		return fullBid{}, 0, err
	}
	for _, sb := range br.SeatBid {
		for _, b := range sb.Bid {
			if b.CID == "money" {
				return fullBid{nurl: b.NURL, burl: b.BURL, lurl: b.LURL, clicks: clickURL.FindAllString(b.AdM, -1)}, 0, nil
			}
		}
	}
	if br.NBR != nil {
		return fullBid{}, *br.NBR, nil
	}
	return fullBid{}, 0, fmt.Errorf("no bid for money: %.200s", resp.Body())
}

// local turns one of the bid's URLs (on publicURL) into one on addr.
func local(u, addr string) string {
	return "http://" + addr + strings.TrimPrefix(u, publicURL)
}

func recordsConfig(t *testing.T, k *kafkaCluster, extra ...string) bidderConfig {
	sets := []string{"user.store=pebble", "spend.flush_interval=200ms", "records.roll_interval=1s",
		"records.nobid_sample=1", "bidder.click_links=absolute", "user.trust_query_uid=true", "bidder.shutdown_timeout=5s",
		"bidder.rate_limits.event.rate=100000", "bidder.rate_limits.event.burst=100000"} // one test source sends every view
	if k != nil {
		sets = append(sets, "records.kafka.brokers="+strings.Join(k.brokers, ","), "records.kafka.topic_prefix="+k.prefix)
	}
	return bidderConfig{dataDir: filepath.Join(t.TempDir(), "bidder"), campaigns: campaignsYAML(t, ""), sets: append(sets, extra...)}
}

// TestRecordsCounts: bids with wins, losses, charges,
// clicks, views and sampled no-bids; with no drop counted, the records of
// each kind (files and Kafka) equal the bidder's own counters, every
// charge joins a bid by nonce, and rtbd report's spend per campaign equals
// /admin/campaigns' to the micro.
func TestRecordsCounts(t *testing.T) {
	n := envInt("RTBD_RECORDS_BIDS", 2000)
	k, _ := startKafka(t, false)
	cfg := recordsConfig(t, k)
	p := startBidder(t, "records", cfg)
	c := newClient()
	var bids, nobids, wins, bills, losses, clicks, views atomic.Int64
	var failures atomic.Int64
	fail := func(format string, a ...any) {
		if failures.Add(1) <= 5 {
			t.Errorf(format, a...)
		}
	}
	inWorkers(8, n+n/25, func(i int) bool {
		uid := userID
		if i >= n {
			uid = "nobody" // a no-bid (unknown user), n/25 of them after the n bids
		}
		b, nbr, err := bidFull(c, p.addr, bidRequestFor(fmt.Sprintf("rec-%d", i), "www.news.example", uid))
		switch {
		case err != nil:
			fail("bid %d: %v", i, err)
			return true
		case b.burl == "":
			nobids.Add(1)
			_ = nbr
			return true
		}
		bids.Add(1)
		get1 := func(u string, want int, ctr *atomic.Int64) {
			st, err := get(c, u)
			if err != nil || st != want {
				fail("bid %d: GET %s: %d %v, want %d", i, u, st, err, want)
				return
			}
			ctr.Add(1)
		}
		switch i % 4 {
		case 0, 1: // won and billed
			get1(strings.Replace(local(b.nurl, p.addr), "${AUCTION_PRICE}", clearing, 1), 204, &wins)
			get1(strings.Replace(local(b.burl, p.addr), "${AUCTION_PRICE}", clearing, 1), 204, &bills)
			if i%8 == 0 && len(b.clicks) > 0 {
				u := local(strings.Replace(b.clicks[0], "https://", "http://", 1), p.addr)
				get1(u, 302, &clicks)
			}
		case 2: // lost
			u := strings.NewReplacer("${AUCTION_LOSS}", "102", "${AUCTION_MIN_TO_WIN}", "2.10").Replace(local(b.lurl, p.addr))
			get1(u, 204, &losses)
		}
		if i%10 == 3 {
			u := fmt.Sprintf("http://%s%s?uid=%s&pg=%d&pid=%d&ev=view", p.addr, bidder.PathEvent, userID, catalogtest.BulkGroup, 1+i%9)
			get1(u, 200, &views)
		}
		return true
	})
	if failures.Load() > 0 {
		t.FailNow()
	}
	m := p.metrics(t)
	status := p.campaignStatus(t)
	if err := p.terminate(); err != nil { // completes every open file
		t.Fatalf("bidder exit: %v", err)
	}
	t.Logf("%d bids, %d no-bids, %d wins, %d bills, %d losses, %d clicks, %d views sent", bids.Load(), nobids.Load(),
		wins.Load(), bills.Load(), losses.Load(), clicks.Load(), views.Load())
	for series, v := range m {
		if strings.HasPrefix(series, "rtbd_records_dropped_total") && v != 0 {
			t.Errorf("%s = %v: the counts below are only comparable without drops", series, v)
		}
	}
	dir := filepath.Join(cfg.dataDir, "records")
	want := map[records.Kind]float64{
		records.KindBid:    m[`rtbd_bidder_bids_total{exchange="default"}`],
		records.KindWin:    m[`rtbd_notices_total{kind="win",outcome="accepted"}`] + m[`rtbd_notices_total{kind="win",outcome="estimated_price"}`],
		records.KindCharge: m[`rtbd_notices_total{kind="bill",outcome="accepted"}`] + m[`rtbd_notices_total{kind="bill",outcome="estimated_price"}`],
		records.KindLoss:   m[`rtbd_notices_total{kind="loss",outcome="accepted"}`],
		records.KindClick:  m[`rtbd_bidder_clicks_total{result="ok"}`] + m[`rtbd_bidder_clicks_total{result="expired"}`],
		records.KindView:   m[`rtbd_bidder_events_total{result="ok"}`],
	}
	var nb float64
	for s, v := range m {
		if strings.HasPrefix(s, "rtbd_bidder_nobids_total") {
			nb += v
		}
	}
	want[records.KindNoBid] = nb
	if want[records.KindBid] != float64(bids.Load()) || float64(status.Bids) != float64(bids.Load()) {
		t.Errorf("bids: %d sent and answered with a bid, rtbd_bidder_bids_total %v, /admin/campaigns %d", bids.Load(), want[records.KindBid], status.Bids)
	}
	fileBids, _ := fileNonces(t, dir, records.KindBid)
	for kind, w := range want {
		got, total := fileNonces(t, dir, kind)
		if float64(total) != w || (kind != records.KindNoBid && kind != records.KindView && float64(len(got)) != w) {
			t.Errorf("%s: %d records (%d distinct nonces) in the files, the bidder counted %v", kind, total, len(got), w)
		}
		t.Logf("%s: %d records in the files, the bidder counted %v", kind, total, w)
		if kind == records.KindCharge {
			for nonce := range got {
				if !fileBids[nonce] {
					t.Errorf("charge %s joins no bid record", nonce)
					break
				}
			}
		}
		if kind == records.KindCharge || kind == records.KindBid {
			kn, _ := k.nonces(t, kind.String(), int(w), 20*time.Second)
			if float64(len(kn)) != w {
				t.Errorf("%s: %d distinct nonces on Kafka, the bidder counted %v", kind, len(kn), w)
			}
		}
	}
	if n := arrowReadsAll(t, dir); n != int(bids.Load()+nobids.Load()+wins.Load()+bills.Load()+losses.Load()+clicks.Load()+views.Load()) {
		t.Errorf("arrow-go read %d rows in the files, %d records sent", n, bids.Load()+nobids.Load()+wins.Load()+bills.Load()+losses.Load()+clicks.Load()+views.Load())
	}
	var out, errOut bytes.Buffer
	if err := report.Main(context.Background(), []string{"-records", dir, "-by", "campaign", "-format", "json", "-check"}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	var rows []struct {
		Campaign    string `json:"campaign"`
		Bids        int64  `json:"bids"`
		Charges     int64  `json:"charges"`
		SpendMicros int64  `json:"spend_micros"`
	}
	if err := json.Unmarshal(out.Bytes(), &rows); err != nil || len(rows) != 1 {
		t.Fatalf("report: %v %s", err, out.Bytes())
	}
	t.Logf("rtbd report -by campaign: %s; /admin/campaigns money: total_micros %d", bytes.TrimSpace(out.Bytes()), status.TotalMicros)
	if rows[0].Campaign != "money" || rows[0].SpendMicros != status.TotalMicros || rows[0].SpendMicros != bills.Load()*chargeMicros {
		t.Errorf("report spend %d micros for %q, /admin/campaigns %d, bills sent x charge %d", rows[0].SpendMicros, rows[0].Campaign,
			status.TotalMicros, bills.Load()*chargeMicros)
	}
	if !strings.Contains(errOut.String(), "check: 0 charges and 0 imps without a bid record") {
		t.Errorf("report -check: %s", errOut.String())
	}
}

// TestRecordsKill9: a bidder killed with SIGKILL right
// after it accepted 1,000 bills; after a restart, the files and the Kafka
// topic each hold 1,000 distinct charge nonces.
func TestRecordsKill9(t *testing.T) {
	const bills = 1000
	k, _ := startKafka(t, false)
	cfg := recordsConfig(t, k, "records.roll_interval=1h") // nothing completes by time before the kill
	p := startBidder(t, "records-kill9", cfg)
	c := newClient()
	urls := make([]string, bills)
	inWorkers(8, bills, func(i int) bool {
		b, _, err := bidFull(c, p.addr, bidRequest(fmt.Sprintf("k9-%d", i), "www.news.example"))
		if err != nil || b.burl == "" {
			t.Errorf("bid %d: %v", i, err)
			return false
		}
		urls[i] = strings.Replace(local(b.burl, p.addr), "${AUCTION_PRICE}", clearing, 1)
		return true
	})
	if t.Failed() {
		t.FailNow()
	}
	var accepted atomic.Int64
	inWorkers(8, bills, func(i int) bool {
		if st, err := get(c, urls[i]); err != nil || st != 204 {
			t.Errorf("bill %d: %d %v", i, st, err)
		} else {
			accepted.Add(1)
		}
		return true
	})
	p.kill()
	if accepted.Load() != bills {
		t.Fatalf("%d bills accepted, want %d", accepted.Load(), bills)
	}
	dir := filepath.Join(cfg.dataDir, "records")
	before, _ := fileNonces(t, dir, records.KindCharge)
	t.Logf("killed after %d accepted bills; the files held %d charges then", bills, len(before))

	cfg.sets = append(cfg.sets, "records.roll_interval=1s")
	p2 := startBidder(t, "records-kill9-restarted", cfg)
	var files map[records.Nonce]bool
	var recs int
	waitFor(30*time.Second, func() bool {
		files, recs = fileNonces(t, dir, records.KindCharge)
		return len(files) >= bills
	})
	kn, msgs := k.nonces(t, "charge", bills, 30*time.Second)
	t.Logf("after the restart: files %d distinct charge nonces (%d records), Kafka %d (%d messages)", len(files), recs, len(kn), msgs)
	if len(files) != bills || len(kn) != bills {
		t.Errorf("distinct charge nonces: files %d, Kafka %d; want %d each", len(files), len(kn), bills)
	}
	if err := p2.terminate(); err != nil {
		t.Errorf("restarted bidder exit: %v", err)
	}
}

// TestRecordsKafkaCut: Kafka cut off (the relay holds every byte) under a
// load of bids and bills for at least RTBD_RECORDS_CUT and until the
// producer's buffer (records.buffer_bytes, 64 KiB here) has overflowed:
// no /bill is refused, non-charge records are dropped and counted once
// the buffer is full, and every charge is on Kafka after the cut heals.
// Bid latency (before, during and after) and RSS are logged, not asserted
// (no timing asserts; RSS under 1 GiB).
func TestRecordsKafkaCut(t *testing.T) {
	cut := 5 * time.Second
	if d, err := time.ParseDuration(os.Getenv("RTBD_RECORDS_CUT")); err == nil && d > 0 {
		cut = d
	}
	k, rl := startKafka(t, true)
	cfg := recordsConfig(t, k, "records.kafka.delivery_timeout=1s", "records.buffer_bytes=65536")
	p := startBidder(t, "records-cut", cfg)
	c := newClient()
	var mu sync.Mutex
	var lat [3][]time.Duration // before, during, after the cut
	var phase atomic.Int32
	var accepted, refused atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				start := time.Now()
				b, _, err := bidFull(c, p.addr, bidRequest(fmt.Sprintf("cut-%d-%d", w, i), "www.news.example"))
				d := time.Since(start)
				ph := phase.Load()
				mu.Lock()
				lat[ph] = append(lat[ph], d)
				mu.Unlock()
				if err != nil || b.burl == "" {
					continue
				}
				st, err := get(c, strings.Replace(local(b.burl, p.addr), "${AUCTION_PRICE}", clearing, 1))
				if err == nil && st == 204 {
					accepted.Add(1)
				} else {
					refused.Add(1)
				}
			}
		}()
	}
	time.Sleep(time.Second)
	rssBefore := rss(t, p)
	written := func() float64 { return p.metrics(t)[`rtbd_records_written_total{kind="bid",sink="kafka"}`] }
	w0 := written()
	rl.Pause()
	phase.Store(1)
	cutStart := time.Now()
	time.Sleep(cut)
	// The cut goes on until bid records are dropped: how soon the buffer
	// fills depends on how fast the bidder answers on this machine.
	var d float64
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if d = p.metrics(t)[`rtbd_records_dropped_total{kind="bid",sink="kafka"}`]; d > 0 {
			break
		}
	}
	rssDuring := rss(t, p)
	cutFor := time.Since(cutStart).Round(100 * time.Millisecond)
	t.Logf("bid records written to Kafka: %v before the cut, %v at its end", w0, written())
	rl.Resume()
	phase.Store(2)
	time.Sleep(time.Second)
	close(stop)
	wg.Wait()
	t.Logf("cut %s: bills accepted %d, refused %d; RSS %d kB before, %d kB at the end of the cut", cutFor, accepted.Load(), refused.Load(), rssBefore, rssDuring)
	for i, name := range []string{"before", "during", "after"} {
		t.Logf("bid latency %s the cut: %s", name, quantiles(lat[i]))
	}
	if refused.Load() != 0 {
		t.Errorf("%d bills not answered 204 while Kafka was cut", refused.Load())
	}
	t.Logf("bid records dropped for Kafka during the cut: %v", d)
	if d == 0 {
		t.Errorf("a %s cut with a 64 KiB buffer dropped no bid record for Kafka", cutFor)
	}
	kn, msgs := k.nonces(t, "charge", int(accepted.Load()), 60*time.Second)
	t.Logf("after the cut: %d distinct charge nonces on Kafka (%d messages), %d bills accepted", len(kn), msgs, accepted.Load())
	if len(kn) != int(accepted.Load()) {
		t.Errorf("%d distinct charges on Kafka, %d bills accepted", len(kn), accepted.Load())
	}
	if rssDuring > 1<<20 { // kB: 1 GiB
		t.Errorf("RSS %d kB during the cut", rssDuring)
	}
}

// rss is the bidder's resident set size in kB.
func rss(t *testing.T, p *proc) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.PID()))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return n
		}
	}
	return 0
}

func quantiles(ds []time.Duration) string {
	if len(ds) == 0 {
		return "no requests"
	}
	s := append([]time.Duration(nil), ds...)
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	q := func(f float64) time.Duration { return s[min(len(s)-1, int(f*float64(len(s))))] }
	return fmt.Sprintf("%d requests, p50 %s, p99 %s", len(s), q(0.5), q(0.99))
}

// arrowReadsAll reads every file the bidder completed under dir with
// arrow-go's Parquet reader (a second implementation), and checks that no
// file is left under a hidden name; it returns the rows read.
func arrowReadsAll(t *testing.T, dir string) int {
	t.Helper()
	rows := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if strings.HasPrefix(d.Name(), ".") {
			t.Errorf("%s: a hidden (incomplete) file after the bidder's shutdown", p)
			return nil
		}
		if _, _, ok := records.ParseFileName(d.Name()); !ok {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		tbl, err := pqarrow.ReadTable(context.Background(), f, parquet.NewReaderProperties(memory.DefaultAllocator),
			pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
		if err != nil {
			t.Errorf("arrow-go cannot read %s: %v", p, err)
			return nil
		}
		rows += int(tbl.NumRows())
		tbl.Release()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return rows
}
