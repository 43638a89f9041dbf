package e2e

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/rtbd/rtbd/bidder"
	"github.com/rtbd/rtbd/bidder/campaign/pgsource/pgtest"
	"github.com/rtbd/rtbd/bidder/spend"
	"github.com/rtbd/rtbd/bidder/spend/redisstore"
	"github.com/rtbd/rtbd/bidder/spend/spendtest"
	userredis "github.com/rtbd/rtbd/bidder/user/redisstore"
	"github.com/rtbd/rtbd/catalog/catalogtest"
	"github.com/rtbd/rtbd/catalog/node"
	"github.com/rtbd/rtbd/configs"
	"github.com/rtbd/rtbd/rtb"
)

// asCatalogNode makes the re-executed test binary run catalogNodeChild.
const asCatalogNode = "BIDDER_E2E_AS_CATALOG_NODE"

// The fleet of TestFleetEndToEnd.
const (
	fleetBidders = 3
	// fleetFlush is every bidder's spend.flush_interval: the default,
	// so that the overshoot bound (the charges of one flush interval) is
	// the one a production fleet gets.
	fleetFlush = time.Second
	// fleetBudget is the daily budget of "money" (daily_budget 0.3), in
	// micros: 200 charges of chargeMicros.
	fleetBudget = 300_000
	// fleetLeft is how many charges of the budget the rolling restart
	// starts with: the rest is already spent.
	fleetLeft = 40
	// fleetViewer is the user whose views (a) posts; fleetLoadUser the
	// user of every other bid (a profile written into Redis).
	fleetViewer   = "fleet-viewer"
	fleetLoadUser = "fleet-load-user"
)

// catalogNodeChild is a catalog node process, started as `rtbd
// -mode=catalog` starts one (node.Start, node.Shutdown on SIGTERM): args
// are the address file (its gRPC address, then its admin address), then
// key=value settings over configs.Default().
func catalogNodeChild(args []string) int {
	return runChild("catalog node child", args, []string{"mode=catalog"}, func(cfg *configs.Config, log *zap.Logger) (childServer, error) {
		n, err := node.Start(cfg, log)
		if err != nil {
			return nil, err
		}
		return n, nil
	})
}

// startCatalogNode starts a catalog node child serving the shared fixture
// catalog (read-only: every node opens the same published version).
func startCatalogNode(t testing.TB, name string) *proc {
	t.Helper()
	dir := t.TempDir()
	return spawn(t, name, asCatalogNode, dir, []string{filepath.Join(dir, "addr"),
		"log.level=warn", "log.format=json",
		"catalog.data=" + catalogDir,
		"catalog.grpc_listen=127.0.0.1:0",
		"admin.listen=127.0.0.1:0",
		"catalog.graceful_timeout=2s",
	})
}

// fleet is the running fleet of TestFleetEndToEnd: one redis-server, one
// PostgreSQL, two catalog nodes and three bidders. Subtests restart
// bidders: members holds the current process of each slot.
type fleet struct {
	t      *testing.T // the whole test: processes live as long as it
	redis  *spendtest.Redis
	rdb    *redis.Client
	spend  *redisstore.Store
	pg     *pgtest.Server
	nodes  []*proc
	target string // catalog.target of the bidders
	camps  string // the campaigns file loaded into PostgreSQL
	dirs   [fleetBidders]string
	c      *fasthttp.Client
	day0   string // the UTC day the fleet started on
	loaded bool   // the rolling restart's load ran

	mu      sync.Mutex
	members [fleetBidders]*member
	up      [fleetBidders]bool // taking traffic (false while restarting)
	starts  [fleetBidders]int
}

// member is one bidder process of the fleet.
type member struct {
	slot    int
	name    string    // b1, b1.2 (its second process), ...
	started time.Time // just before its process was started
	p       *proc

	// What the rolling restart's load got from it.
	bids, noBids atomic.Int64
	nbr          sync.Map // nbr -> *atomic.Int64
}

func (m *member) countNoBid(nbr int) {
	v, _ := m.nbr.LoadOrStore(nbr, new(atomic.Int64))
	v.(*atomic.Int64).Add(1)
	m.noBids.Add(1)
}

func (m *member) nbrs() string {
	var parts []string
	m.nbr.Range(func(k, v any) bool {
		parts = append(parts, fmt.Sprintf("nbr %d x%d", k, v.(*atomic.Int64).Load()))
		return true
	})
	slices.Sort(parts)
	return strings.Join(parts, ", ")
}

// outliving is the testing.TB of a process a subtest starts for the rest
// of the fleet test: failures go to the subtest; logs, temporary
// directories and cleanups (the process's kill) to the fleet test.
type outliving struct {
	testing.TB // the subtest
	life       testing.TB
}

func (o outliving) Cleanup(f func())             { o.life.Cleanup(f) }
func (o outliving) TempDir() string              { return o.life.TempDir() }
func (o outliving) Logf(format string, a ...any) { o.life.Logf(format, a...) }
func (o outliving) Failed() bool                 { return o.TB.Failed() || o.life.Failed() }
func (o outliving) Log(a ...any)                 { o.life.Log(a...) }

// TestFleetEndToEnd runs the fleet with real processes: redis-server with
// AOF and appendfsync always (spend, frequency and notice keys, user
// profiles, fraud lists), PostgreSQL holding the campaigns
// (campaigns.source postgres), two catalog nodes serving one catalog, and
// three bidders with redis.addr (user.store and spend.store auto: Redis)
// on the remote catalog (catalog.target static:///node1,node2), one token
// key for the fleet. The campaign "money" has a daily budget of 0.3 (200
// charges of 1.5 CPM).
//
//	views            product views posted to bidder 1 (/event) make
//	                 bidders 2 and 3 bid for that user, with those products
//	                 (before them, both answer nbr 8: no profile)
//	replay           a bill accepted by bidder 2, replayed to bidder 3,
//	                 then to bidder 3 again after its restart: Redis
//	                 charges it once
//	rolling_restart  the budget nearly spent (40 charges left), a
//	                 generator bids on a bidder chosen at random every
//	                 100ms and fires each bid's nurl and burl 0.5-1s later
//	                 at a bidder chosen at random (retrying another when
//	                 refused or 503), logging every accepted charge with
//	                 its time; meanwhile every bidder is restarted in turn
//	                 (SIGTERM, exit 0, start on the same data dir), and
//	                 once Redis says the budget is spent, every bidder once
//	                 more, each sent 20 bid requests as soon as it serves
//	                 (a fleet that pauses the campaign short of the budget
//	                 for 15s, holding back for its unbilled bids, has the
//	                 rest spent directly first).
//	                 Asserted: Redis's day spend <= budget + the most
//	                 charges the generator's log shows accepted within one
//	                 flush interval; Redis holds every accepted charge
//	                 (and at most those plus the notices whose answer was
//	                 lost); no bidder process started after Redis said the
//	                 budget was spent bids on it.
//
// No assert is on wall-clock timings: the flush interval bounds only the
// spend (counted from the log), never how fast a process answered.
func TestFleetEndToEnd(t *testing.T) {
	f := startFleet(t, "    daily_budget: 0.3\n")
	t.Run("views", f.views)
	t.Run("replay", f.replay)
	t.Run("rolling_restart", f.rollingRestart)
	// GetProductMasters lookups, and GetProducts calls (the bidders' near
	// caches ask for records). The bidders' caches answer most bids, so the
	// spread is judged only when the nodes answered enough lookups for
	// round-robin to show: a few alone may all go to one node.
	lookups := make([]float64, len(f.nodes))
	var sum float64
	for i, n := range f.nodes {
		m := n.metrics(t)
		lookups[i] = m["rtbd_catalog_local_lookups_total"] + m[`rtbd_catalog_server_method_requests_total{code="OK",method="GetProducts"}`]
		sum += lookups[i]
		t.Logf("%s answered %v lookups", n.name, lookups[i])
	}
	for i, n := range f.nodes {
		if f.loaded && sum >= 20 && lookups[i] == 0 {
			t.Errorf("%s answered none of %v lookups under the load: the bidders did not use both catalog nodes", n.name, sum)
		}
	}
	if today() != f.day0 {
		t.Skip("the run crossed midnight UTC: the daily budget restarted")
	}
}

// startFleet starts the fleet, its campaign "money" with the extra YAML
// lines given (budgets).
func startFleet(t *testing.T, budget string) *fleet {
	f := &fleet{t: t, c: newClient(), day0: today()}
	f.redis = spendtest.StartRedis(t, spendtest.RedisOptions{Persist: true})
	f.rdb = redis.NewClient(&redis.Options{Addr: f.redis.Addr, ContextTimeoutEnabled: true})
	t.Cleanup(func() { f.rdb.Close() })
	f.spend = redisstore.New(f.rdb, redisstore.Options{Prefix: "rtbd:"})
	if err := f.rdb.ConfigGet(context.Background(), "appendfsync").Err(); err != nil {
		t.Fatal(err)
	}
	if v := f.rdb.ConfigGet(context.Background(), "appendfsync").Val()["appendfsync"]; v != "always" {
		t.Fatalf("redis-server appendfsync %q, want always", v)
	}
	f.pg = pgtest.Start(t)
	f.camps = campaignsYAML(t, budget)
	f.pg.LoadFile(t, f.camps)

	// The load user's profile, in the fleet's user store.
	users := userredis.New(f.rdb, userredis.Options{Prefix: "rtbd:", TTL: time.Hour})
	if err := users.Put(context.Background(), fleetLoadUser, testProfile()); err != nil {
		t.Fatal(err)
	}

	nodes := make([]*proc, 2)
	var wg sync.WaitGroup
	for i := range nodes {
		wg.Go(func() { nodes[i] = startCatalogNode(t, fmt.Sprintf("catalog-node%d", i+1)) })
	}
	wg.Wait()
	var addrs []string
	for _, n := range nodes {
		if n == nil {
			t.FailNow()
		}
		addrs = append(addrs, n.addr)
	}
	f.nodes, f.target = nodes, "static:///"+strings.Join(addrs, ",")

	for i := range f.dirs {
		f.dirs[i] = filepath.Join(t.TempDir(), fmt.Sprintf("b%d", i+1))
	}
	ms := make([]*member, fleetBidders)
	for i := range ms {
		wg.Go(func() { ms[i] = f.start(t, i, nil) })
	}
	wg.Wait()
	for _, m := range ms {
		if m == nil {
			t.FailNow()
		}
	}
	t.Logf("fleet: redis-server %s (appendonly yes, appendfsync always), postgres %s, catalog nodes %s, bidders %s %s %s",
		f.redis.Addr, strings.Split(f.pg.DSN, "@")[1], f.target, ms[0].p.addr, ms[1].p.addr, ms[2].p.addr)
	return f
}

// sets are the settings of slot's bidder.
func (f *fleet) sets(slot int) []string {
	return []string{
		"redis.addr=" + f.redis.Addr, // user.store and spend.store auto: redis
		"catalog.target=" + f.target,
		"campaigns.source=postgres",
		"campaigns.postgres.dsn=" + f.pg.DSN,
		"campaigns.refresh_interval=2s",
		"spend.flush_interval=" + fleetFlush.String(),
		"spend.flush_timeout=1s",
		"fraud.check_interval=1s",
		"bidder.click_links=absolute", // the products of a creative, readable in its adm
		"bidder.shutdown_timeout=5s",
		"user.trust_query_uid=true", // /event?uid= from the test, a server-side integration
		"spend.instance_id=" + fmt.Sprintf("b%d", slot+1),
		"spend.journal_dir=" + filepath.Join(f.dirs[slot], "journal"),
		"spend.startup_read_timeout=5s",
		"bidder.shutdown_delay=300ms",
	}
}

// start starts slot's bidder (its first process or a new one on the same
// data dir), puts it in the load, calls first (when not nil) as soon as it
// serves, then waits for its /readyz; failures go to t, the process lives
// as long as the fleet test.
func (f *fleet) start(t testing.TB, slot int, first func(*member)) *member {
	t.Helper()
	f.mu.Lock()
	f.starts[slot]++
	name := fmt.Sprintf("b%d", slot+1)
	if n := f.starts[slot]; n > 1 {
		name += "." + strconv.Itoa(n)
	}
	f.mu.Unlock()
	var tb testing.TB = f.t
	if t != testing.TB(f.t) {
		tb = outliving{TB: t, life: f.t}
	}
	m := &member{slot: slot, name: name, started: time.Now()}
	m.p = startBidder(tb, name, bidderConfig{dataDir: f.dirs[slot], campaigns: f.camps, sets: f.sets(slot)})
	f.mu.Lock()
	f.members[slot], f.up[slot] = m, true
	f.mu.Unlock()
	if first != nil {
		first(m)
	}
	if !waitFor(30*time.Second, func() bool { return m.p.ready() }) {
		t.Errorf("bidder %s: /readyz not 200 within 30s", name)
	}
	return m
}

// ready reports whether p's /readyz answers 200.
func (p *proc) ready() bool {
	st, _, err := getNotice(newClient(), "http://"+p.admin+"/readyz")
	return err == nil && st == 200
}

// restart stops slot's bidder (out of the load first, then SIGTERM; its
// exit must be 0: Shutdown flushed what it accepted) and starts it again
// on the same data dir (see start for first).
func (f *fleet) restart(t testing.TB, slot int, first func(*member)) *member {
	t.Helper()
	f.mu.Lock()
	old := f.members[slot]
	f.up[slot] = false
	f.mu.Unlock()
	if err := old.p.terminate(); err != nil {
		t.Errorf("bidder %s: exit after SIGTERM: %v (code %d)", old.name, err, exitCode(err))
	}
	return f.start(t, slot, first)
}

func (f *fleet) member(slot int) *member {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.members[slot]
}

// pick is a bidder taking traffic, chosen at random (nil when none is).
func (f *fleet) pick() *member {
	f.mu.Lock()
	defer f.mu.Unlock()
	var up []*member
	for i, m := range f.members {
		if f.up[i] {
			up = append(up, m)
		}
	}
	if len(up) == 0 {
		return nil
	}
	return up[rand.IntN(len(up))]
}

// readDay is Redis's total of "money" today.
func (f *fleet) readDay(t testing.TB) spend.Total {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	tot, err := f.spend.Read(ctx, []string{"money"}, today())
	if err != nil {
		t.Fatal(err)
	}
	return tot[0]
}

// settle waits until every bidder has flushed what it accepted: no
// unflushed spend, no campaign retrying.
func (f *fleet) settle(t testing.TB) {
	t.Helper()
	for slot := range fleetBidders {
		m := f.member(slot)
		var mm map[string]float64
		if !waitFor(20*time.Second, func() bool {
			mm = m.p.metrics(t)
			return mm["rtbd_spend_unflushed_micros"] == 0 && mm["rtbd_spend_retrying_campaigns"] == 0
		}) {
			t.Fatalf("bidder %s: unflushed %v micros, %v campaigns retrying after 20s", m.name,
				mm["rtbd_spend_unflushed_micros"], mm["rtbd_spend_retrying_campaigns"])
		}
	}
}

// bidFor sends bid requests for uid to m until one is answered with a bid
// for "money" or a no-bid other than a transient one (a deadline miss or a
// technical error while the remote catalog connects), for at most 10s.
func (f *fleet) bidFor(m *member, uid string) bidAnswer {
	var a bidAnswer
	deadline := time.Now().Add(10 * time.Second)
	for i := 0; ; i++ {
		a = bid(f.c, m.p.addr, bidRequestFor(fmt.Sprintf("%s-%s-%d", m.name, uid, i), "www.news.example", uid))
		transient := a.err == nil && !a.bid && (a.nbr == int(rtb.NoBidDeadline) || a.nbr == int(rtb.NoBidTechnicalError))
		if !transient || time.Now().After(deadline) {
			return a
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// clickProduct matches a product link of an adm (bidder.click_links
// absolute: PUBLIC_URL/click?t=TOKEN.PRODUCT).
var clickProduct = regexp.MustCompile(`/click\?t=[A-Za-z0-9_\-]+\.([0-9]+)`)

// products are the product ids an adm links to, sorted, without repeats.
func products(adm string) []int64 {
	var ids []int64
	for _, m := range clickProduct.FindAllStringSubmatch(adm, -1) {
		id, err := strconv.ParseInt(m[1], 10, 64)
		if err == nil && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// views is (a): product views posted to bidder 1 make bidders 2 and 3 bid
// for that user with those products.
func (f *fleet) views(t *testing.T) {
	viewed := []int64{3, 5, 7} // in stock in the fixture's group 1
	for _, slot := range []int{1, 2} {
		m := f.member(slot)
		a := f.bidFor(m, fleetViewer)
		if a.err != nil || a.bid || a.nbr != int(rtb.NoBidUnmatchedUser) {
			t.Fatalf("bidder %s before the views: bid %v nbr %d err %v, want no-bid nbr 8 (no profile for %s)", m.name, a.bid, a.nbr, a.err, fleetViewer)
		}
		t.Logf("(a) before the views: %s answers %s with no-bid nbr %d (no profile)", m.name, fleetViewer, a.nbr)
	}
	b1 := f.member(0)
	for _, pid := range viewed {
		url := fmt.Sprintf("http://%s%s?uid=%s&pg=%d&pid=%d&ev=view", b1.p.addr, bidder.PathEvent, fleetViewer, catalogtest.BulkGroup, pid)
		if st, err := get(f.c, url); err != nil || st != 200 {
			t.Fatalf("bidder %s %s: %d %v, want 200", b1.name, url, st, err)
		}
	}
	t.Logf("(a) views of products %v (group %d) posted to %s /event for %s", viewed, catalogtest.BulkGroup, b1.name, fleetViewer)
	for _, slot := range []int{1, 2} {
		m := f.member(slot)
		a := f.bidFor(m, fleetViewer)
		if a.err != nil || !a.bid {
			t.Errorf("bidder %s after the views on %s: bid %v nbr %d err %v, want a bid for money", m.name, b1.name, a.bid, a.nbr, a.err)
			continue
		}
		got := products(a.adm)
		t.Logf("(a) %s bids %.2f CPM for %s with products %v", m.name, a.price, fleetViewer, got)
		if !slices.Equal(got, viewed) {
			t.Errorf("bidder %s: the bid for %s links products %v, want the viewed %v", m.name, fleetViewer, got, viewed)
		}
	}
}

// replay is (b): a bill replayed to another bidder, and again after a
// restart of that bidder, is charged once.
func (f *fleet) replay(t *testing.T) {
	f.settle(t)
	before := f.readDay(t)
	b2, b3 := f.member(1), f.member(2)
	a := f.bidFor(b2, fleetLoadUser)
	if a.err != nil || !a.bid {
		t.Fatalf("bidder %s: bid %v nbr %d err %v, want a bid for money", b2.name, a.bid, a.nbr, a.err)
	}
	var bill string
	for _, u := range []string{a.nurl, a.burl} {
		url, err := noticeURL(u, b2.p.addr, clearing)
		if err != nil {
			t.Fatal(err)
		}
		if st, out, err := getNotice(f.c, url); err != nil || st != 204 || out != "accepted" {
			t.Fatalf("bidder %s %s: %d %q %v, want 204 accepted", b2.name, url, st, out, err)
		}
		bill = strings.TrimPrefix(url, "http://"+b2.p.addr)
	}
	check := func(what string) {
		t.Helper()
		f.settle(t)
		tot := f.readDay(t)
		t.Logf("(b) %s: redis day %d micros, %d impressions (%+d micros, %+d impressions since before the bid)",
			what, tot.DayMicros, tot.DayImps, tot.DayMicros-before.DayMicros, tot.DayImps-before.DayImps)
		if tot.DayMicros-before.DayMicros != chargeMicros || tot.DayImps-before.DayImps != 1 {
			t.Errorf("after %s: redis charged %d micros / %d impressions for the one bill, want %d / 1",
				what, tot.DayMicros-before.DayMicros, tot.DayImps-before.DayImps, chargeMicros)
		}
	}
	check("the bill on " + b2.name)
	replayTo := func(m *member) {
		t.Helper()
		st, out, err := getNotice(f.c, "http://"+m.p.addr+bill)
		t.Logf("(b) the bill replayed to %s: %d %s", m.name, st, out)
		if err != nil || st != 204 {
			t.Errorf("the bill replayed to %s: %d %q %v, want 204 (accepted or replay, charged at most once)", m.name, st, out, err)
		}
		check("its replay to " + m.name)
	}
	replayTo(b3)
	b3 = f.restart(t, 2, nil)
	replayTo(b3)
}

// charge is one billing notice the generator got accepted.
type charge struct {
	at time.Time
	by string // the bidder that accepted it
}

// load is the generator of the rolling restart.
type load struct {
	f        *fleet
	every    time.Duration   // between two bid requests (0: 100ms)
	lats     []time.Duration // bid answer latencies, when track is set
	track    bool
	stop     chan struct{}
	done     sync.WaitGroup // the bid loop
	notices  sync.WaitGroup
	mu       sync.Mutex
	charges  []charge
	inDoubt  atomic.Int64 // notices whose answer was lost (a transport error after sending)
	bids     atomic.Int64 // bids for money, from every bidder
	noBids   atomic.Int64
	failures atomic.Int64
	firstErr atomic.Value
	seq      atomic.Int64
}

func (l *load) fail(err error) {
	l.failures.Add(1)
	l.firstErr.CompareAndSwap(nil, err)
}

// run bids on a bidder taking traffic every 100ms until stop; a bid's
// nurl and burl are fired 0.5-1s later.
func (l *load) run() {
	defer l.done.Done()
	tick := time.NewTicker(cmp.Or(l.every, 100*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-tick.C:
		}
		m := l.f.pick()
		if m == nil {
			continue
		}
		if a := l.bidOn(m); a.bid {
			l.fire(a, 500*time.Millisecond+rand.N(500*time.Millisecond))
		}
	}
}

// bidOn sends one bid request for the load user to m and counts the
// answer.
func (l *load) bidOn(m *member) bidAnswer {
	a := bid(l.f.c, m.p.addr, bidRequestFor(fmt.Sprintf("roll-%d", l.seq.Add(1)), "www.news.example", fleetLoadUser))
	if l.track {
		l.mu.Lock()
		l.lats = append(l.lats, a.latency)
		l.mu.Unlock()
	}
	switch {
	case a.err != nil:
		// A bidder leaving the load may close a kept-alive connection.
		if !errors.Is(a.err, syscall.ECONNREFUSED) && !errors.Is(a.err, fasthttp.ErrConnectionClosed) {
			l.fail(fmt.Errorf("bid on %s: %w", m.name, a.err))
		}
	case a.bid:
		m.bids.Add(1)
		l.bids.Add(1)
	default:
		m.countNoBid(a.nbr)
		l.noBids.Add(1)
	}
	return a
}

// fire sends a bid's nurl, then its burl, after delay, each to a bidder
// taking traffic, another one when refused or answered 503.
func (l *load) fire(a bidAnswer, delay time.Duration) {
	l.notices.Go(func() {
		time.Sleep(delay)
		for _, u := range []string{a.nurl, a.burl} {
			st, by, ok := l.send(u)
			if !ok {
				return
			}
			if st != 204 {
				l.fail(fmt.Errorf("notice answered %d by %s", st, by))
				return
			}
			if u == a.burl {
				l.mu.Lock()
				l.charges = append(l.charges, charge{at: time.Now(), by: by})
				l.mu.Unlock()
			}
		}
	})
}

// send sends notice URL u; ok is false when its outcome is unknown (a
// transport error after it was sent, counted in doubt) or no bidder took
// it within 30 tries.
func (l *load) send(u string) (status int, by string, ok bool) {
	for range 30 {
		m := l.f.pick()
		if m == nil {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		url, err := noticeURL(u, m.p.addr, clearing)
		if err != nil {
			l.fail(err)
			return 0, "", false
		}
		st, _, err := getNotice(l.f.c, url)
		switch {
		case errors.Is(err, syscall.ECONNREFUSED) || err == nil && st == 503:
			time.Sleep(20 * time.Millisecond) // not taken: another bidder
			continue
		case err != nil:
			l.inDoubt.Add(1)
			return 0, m.name, false
		}
		return st, m.name, true
	}
	l.fail(errors.New("a notice no bidder took in 30 tries"))
	return 0, "", false
}

// peakCharges is the most charges accepted within any window of length d.
func peakCharges(cs []charge, d time.Duration) int {
	ts := make([]time.Time, len(cs))
	for i, c := range cs {
		ts[i] = c.at
	}
	slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
	best, i := 0, 0
	for j := range ts {
		for ts[j].Sub(ts[i]) > d {
			i++
		}
		best = max(best, j-i+1)
	}
	return best
}

// seed brings Redis's day spend of "money" to target micros, as bills
// charged elsewhere (one delta, applied once by its id), and returns the
// impressions added. exact: nothing else may charge meanwhile (else the
// spend after it may be more than target).
func (f *fleet) seed(t testing.TB, target int64, exact bool) int64 {
	t.Helper()
	cur := f.readDay(t)
	micros := target - cur.DayMicros
	if micros < 0 || micros%chargeMicros != 0 {
		t.Fatalf("redis day spend %d micros: cannot seed it to %d", cur.DayMicros, target)
	}
	if micros == 0 {
		return 0
	}
	n := micros / chargeMicros
	now := time.Now()
	d := spend.Delta{ID: "fleet-seed-" + strconv.FormatInt(now.UnixNano(), 36), Campaign: "money", Day: today(), Micros: micros, Imps: n}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	tot, err := f.spend.Flush(ctx, []spend.Delta{d})
	if err != nil {
		t.Fatal(err)
	}
	if tot[0].DayMicros < target || exact && tot[0].DayMicros != target {
		t.Fatalf("seeded redis day spend %d micros, want %d", tot[0].DayMicros, target)
	}
	return n
}

// rollingRestart is (c).
func (f *fleet) rollingRestart(t *testing.T) {
	f.settle(t)
	seeded := f.seed(t, fleetBudget-fleetLeft*chargeMicros, true)
	before := f.readDay(t)
	t.Logf("(c) redis day spend %d of %d micros: %d charges left", before.DayMicros, fleetBudget, (fleetBudget-before.DayMicros)/chargeMicros)

	// Redis's view: when the day spend first reached the budget.
	var spentAt atomic.Int64
	watchStop := make(chan struct{})
	var watch sync.WaitGroup
	watch.Go(func() {
		for {
			select {
			case <-watchStop:
				return
			case <-time.After(10 * time.Millisecond):
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			tot, err := f.spend.Read(ctx, []string{"money"}, today())
			cancel()
			if err == nil && tot[0].DayMicros >= fleetBudget {
				spentAt.CompareAndSwap(0, time.Now().UnixNano())
			}
		}
	})
	defer func() { close(watchStop); watch.Wait() }()

	l := &load{f: f, stop: make(chan struct{})}
	var all []*member
	for slot := range fleetBidders {
		all = append(all, f.member(slot))
	}
	f.loaded = true
	l.done.Add(1)
	go l.run()
	start := time.Now()
	stopped := false
	stopLoad := func() {
		if !stopped {
			stopped = true
			close(l.stop)
			l.done.Wait()
			l.notices.Wait()
		}
	}
	defer stopLoad()

	// Round 1, under load with the budget nearly spent.
	time.Sleep(fleetFlush)
	for slot := range fleetBidders {
		all = append(all, f.restart(t, slot, nil))
		time.Sleep(fleetFlush)
	}
	// A fleet that holds back (its bidders' exposure of unbilled bids)
	// may pause the campaign short of the budget: the rest is then spent
	// as if elsewhere, so that the check below runs.
	var toppedUp int64
	if !waitFor(15*time.Second, func() bool { return spentAt.Load() != 0 }) {
		tot := f.readDay(t)
		t.Logf("(c) the fleet stopped %d micros short of the budget for 15s (day %d micros; load failures %d, first %v): spending the rest directly",
			fleetBudget-tot.DayMicros, tot.DayMicros, l.failures.Load(), l.firstErr.Load())
		toppedUp = f.seed(t, fleetBudget, false)
		if !waitFor(10*time.Second, func() bool { return spentAt.Load() != 0 }) {
			stopLoad()
			t.Fatal("redis did not say the budget was spent after it was spent directly")
		}
	}
	spent := time.Unix(0, spentAt.Load())
	t.Logf("(c) redis said the budget was spent %v into the load", spent.Sub(start).Round(time.Millisecond))

	// Round 2: every bidder restarted after Redis said spent, sent 20 bid
	// requests as soon as it serves (before its /readyz), besides the
	// generator's.
	for slot := range fleetBidders {
		all = append(all, f.restart(t, slot, func(m *member) {
			for range 20 {
				l.bidOn(m)
			}
		}))
	}
	time.Sleep(fleetFlush)
	stopLoad()
	f.settle(t)
	final := f.readDay(t)

	if n := l.failures.Load(); n > 0 {
		t.Errorf("%d load requests failed; first: %v", n, l.firstErr.Load())
	}
	for _, m := range all {
		after := m.started.After(spent)
		t.Logf("(c) %-5s started %+8v from the spend: %3d bids, %3d no-bids (%s)", m.name,
			m.started.Sub(spent).Round(time.Millisecond), m.bids.Load(), m.noBids.Load(), m.nbrs())
		if after && m.bids.Load() > 0 {
			t.Errorf("bidder %s, started after redis said the budget was spent, bid %d times on it", m.name, m.bids.Load())
		}
		if after && m.bids.Load()+m.noBids.Load() == 0 {
			t.Errorf("bidder %s, started after the spend, answered no bid request (the check did not run)", m.name)
		}
	}

	l.mu.Lock()
	charges := slices.Clone(l.charges)
	l.mu.Unlock()
	accepted := int64(len(charges))
	var afterSpent int
	for _, c := range charges {
		if c.at.After(spent) {
			afterSpent++
		}
	}
	slices.SortFunc(charges, func(a, b charge) int { return a.at.Compare(b.at) })
	var logLine strings.Builder
	for _, c := range charges {
		fmt.Fprintf(&logLine, " %+.3fs@%s", c.at.Sub(spent).Seconds(), c.by)
	}
	t.Logf("(c) generator's log, every accepted charge (time from the spend, bidder):%s", logLine.String())
	peak := peakCharges(charges, fleetFlush)
	over := final.DayMicros - fleetBudget
	bound := int64(peak) * chargeMicros
	t.Logf("(c) generator: %d charges accepted (%d after redis said spent, %d notices in doubt); at most %d within one flush interval (%v)",
		accepted, afterSpent, l.inDoubt.Load(), peak, fleetFlush)
	t.Logf("(c) redis day spend %d micros, budget %d: overshoot %d micros (%d charges), bound %d micros (%d charges within one flush interval)",
		final.DayMicros, fleetBudget, over, over/chargeMicros, bound, peak)
	if over > bound {
		t.Errorf("day spend %d micros: %d over the budget %d, more than the %d charges (%d micros) accepted within one flush interval",
			final.DayMicros, over, fleetBudget, peak, bound)
	}
	got := final.DayImps - before.DayImps - toppedUp
	if got < accepted || got > accepted+l.inDoubt.Load() || final.DayMicros-before.DayMicros != got*chargeMicros {
		t.Errorf("redis added %d impressions / %d micros during the rolling restart; the generator got %d charges accepted (+%d in doubt), %d micros each",
			got, final.DayMicros-before.DayMicros, accepted, l.inDoubt.Load(), chargeMicros)
	}
	t.Logf("(c) redis added %d impressions for %d accepted charges (seeded %d before, %d to reach the budget)", got, accepted, seeded, toppedUp)
}
