package node_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/procfs"
	"go.uber.org/zap"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/rtbd/rtbd/catalog/catalogpb"
	"github.com/rtbd/rtbd/catalog/catalogtest"
	"github.com/rtbd/rtbd/catalog/node"
	"github.com/rtbd/rtbd/configs"
)

// stallingConn is a hostile HTTP/2 client: it announces a receive window
// of 0, so the node can send no answer on any of its streams, opens calls
// and never reads them. It reads the frames the node does send, to see
// which streams were refused and when the node closed the connection.
type stallingConn struct {
	c       net.Conn
	fr      *http2.Framer
	wmu     sync.Mutex
	henc    *hpack.Encoder
	hbuf    bytes.Buffer
	next    uint32
	mu      sync.Mutex
	refused []uint32
	status  map[uint32]string // grpc-status of the streams that ended
	closed  chan struct{}     // closed when the node ends the connection
}

func dialStalling(t testing.TB, addr string) *stallingConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	s := &stallingConn{c: c, fr: http2.NewFramer(c, c), next: 1, closed: make(chan struct{}), status: make(map[uint32]string)}
	s.henc = hpack.NewEncoder(&s.hbuf)
	if _, err := io.WriteString(c, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	if err := s.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 0}); err != nil {
		t.Fatal(err)
	}
	go s.read()
	return s
}

func (s *stallingConn) read() {
	defer close(s.closed)
	hdec := hpack.NewDecoder(4096, nil)
	for {
		f, err := s.fr.ReadFrame()
		if err != nil {
			return
		}
		switch f := f.(type) {
		case *http2.RSTStreamFrame:
			if f.ErrCode == http2.ErrCodeRefusedStream {
				s.mu.Lock()
				s.refused = append(s.refused, f.StreamID)
				s.mu.Unlock()
			}
		case *http2.HeadersFrame:
			fields, _ := hdec.DecodeFull(f.HeaderBlockFragment())
			for _, h := range fields {
				if h.Name == "grpc-status" {
					s.mu.Lock()
					s.status[f.StreamID] = h.Value
					s.mu.Unlock()
				}
			}
		case *http2.SettingsFrame:
			if !f.IsAck() {
				s.wmu.Lock()
				s.fr.WriteSettingsAck()
				s.wmu.Unlock()
			}
		}
	}
}

// call opens one GetProductMasters call with req and returns its stream id.
func (s *stallingConn) call(t testing.TB, req *catalogpb.ProductMastersRequest) uint32 {
	t.Helper()
	msg, err := proto.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	body := make([]byte, 5+len(msg))
	binary.BigEndian.PutUint32(body[1:], uint32(len(msg)))
	copy(body[5:], msg)
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.hbuf.Reset()
	for _, h := range [][2]string{{":method", http.MethodPost}, {":scheme", "http"},
		{":path", catalogpb.Catalog_GetProductMasters_FullMethodName}, {":authority", "catalog"},
		{"content-type", "application/grpc"}, {"te", "trailers"}} {
		s.henc.WriteField(hpack.HeaderField{Name: h[0], Value: h[1]})
	}
	id := s.next
	s.next += 2
	if err := s.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: s.hbuf.Bytes(), EndHeaders: true}); err != nil {
		t.Fatal(err)
	}
	if err := s.fr.WriteData(id, true, body); err != nil {
		t.Fatal(err)
	}
	return id
}

// statuses returns the grpc-status of each stream that ended.
func (s *stallingConn) statuses() map[uint32]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := make(map[uint32]string, len(s.status))
	for k, v := range s.status {
		m[k] = v
	}
	return m
}

func (s *stallingConn) refusedStreams() []uint32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]uint32(nil), s.refused...)
}

// startFixtureNode is startNode on the fixture catalog.
func startFixtureNode(t *testing.T, set func(*configs.Catalog)) (*node.Node, catalogpb.CatalogClient) {
	t.Helper()
	dir := t.TempDir()
	catalogtest.WriteFixture(t, dir)
	return startNode(t, dir, set)
}

// startNode starts a node on the catalog in dir, its catalog section
// changed by set, and a well-behaved client connected to it; both are
// stopped when the test ends.
func startNode(t *testing.T, dir string, set func(*configs.Catalog)) (*node.Node, catalogpb.CatalogClient) {
	t.Helper()
	cfg := catalogtest.NodeConfig(t, dir)
	set(&cfg.Catalog)
	n, err := node.Start(cfg, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Shutdown(context.Background()) })
	return n, catalogtest.Client(t, n.Addr())
}

// bulkRequest asks for every product of the fixture's bulk group: an
// answer of some KiB.
func bulkRequest() *catalogpb.ProductMastersRequest {
	req := &catalogpb.ProductMastersRequest{ProductGroupId: catalogtest.BulkGroup, Product1QuantityAtMost: 200,
		Product1Ids: make([]int64, 200)}
	for i := range req.Product1Ids {
		req.Product1Ids[i] = int64(i + 1)
	}
	return req
}

// waitFor polls cond every 20ms for up to 20s.
func waitFor(cond func() bool) bool {
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

// A client that opens connections and calls it never reads costs the node
// no more than its limits, and a well-behaved client is answered meanwhile.
func TestNodeHostileClient(t *testing.T) {
	t.Run("limits", testHostileLimits)
	t.Run("unread answers", testHostileUnreadAnswers)
}

// A client that opens connections and calls it never reads gets no more
// than catalog.max_conns connections and catalog.max_concurrent_streams
// calls on each; a well-behaved client's calls are answered meanwhile, and
// once the hostile client is gone the node is back to its goroutines.
func testHostileLimits(t *testing.T) {
	const maxConns, maxStreams, badConns = 4, 8, 3
	n, cl := startFixtureNode(t, func(c *configs.Catalog) { c.MaxConns, c.MaxConcurrentStreams = maxConns, maxStreams })
	req := bulkRequest()
	goodCall := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		r, err := cl.GetProductMasters(ctx, req)
		if err == nil && len(r.Product1S) == 0 {
			err = errors.New("empty answer")
		}
		return err
	}
	if err := goodCall(); err != nil {
		t.Fatal(err)
	}
	baseline := runtime.NumGoroutine()

	// The hostile client fills every other connection the node holds with
	// maxStreams stalled calls, and two more each.
	var bad []*stallingConn
	for i := 0; i < badConns; i++ {
		s := dialStalling(t, n.Addr())
		defer s.c.Close()
		var extra []uint32
		for j := 0; j < maxStreams+2; j++ {
			id := s.call(t, req)
			if j >= maxStreams {
				extra = append(extra, id)
			}
		}
		if !waitFor(func() bool { return len(s.refusedStreams()) >= len(extra) }) {
			t.Fatalf("connection %d: streams refused %v, want %v (max_concurrent_streams %d)", i, s.refusedStreams(), extra, maxStreams)
		}
		if got := s.refusedStreams(); len(got) != len(extra) || got[0] != extra[0] || got[1] != extra[1] {
			t.Fatalf("connection %d: streams refused %v, want %v", i, got, extra)
		}
		bad = append(bad, s)
	}
	// One connection more than max_conns is closed at once: reading it
	// ends (EOF or reset) rather than waiting.
	over, err := net.Dial("tcp", n.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer over.Close()
	over.SetReadDeadline(time.Now().Add(20 * time.Second))
	if _, err := over.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("connection %d of max_conns %d was not closed: read %v", maxConns+1, maxConns, err)
	}
	for _, s := range bad {
		select {
		case <-s.closed:
			t.Fatal("the node closed a connection within max_conns")
		default:
		}
	}
	if m := metrics(t, n.AdminAddr()); !strings.Contains(m, "rtbd_catalog_node_conns_refused_total 1\n") ||
		!strings.Contains(m, "rtbd_catalog_node_conns_open 4\n") {
		t.Errorf("metrics do not count 1 refused and 4 open connections:\n%s", grep(m, "rtbd_catalog_node_conns"))
	}

	// The well-behaved client is answered meanwhile.
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for i := 0; i < 32; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); errs <- goodCall() }()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("well-behaved call during the attack: %v", err)
		}
	}

	for _, s := range bad {
		s.c.Close()
	}
	over.Close()
	var now int
	if !waitFor(func() bool { now = runtime.NumGoroutine(); return now <= baseline+2 }) {
		buf := make([]byte, 1<<20)
		t.Fatalf("goroutines %d after the hostile client left, baseline %d:\n%s", now, baseline, buf[:runtime.Stack(buf, true)])
	}
	if err := goodCall(); err != nil {
		t.Fatal(err)
	}
}

// One client holds 40 connections with 100 calls each that it never
// reads, every call asking for 1000 products (answers of some hundred
// KiB): the node, in this process, stays under 300 MiB of VmRSS, a second
// client's calls on their own connection all meet their deadline, and
// once the first client is gone the node is back to its goroutines and,
// after a GC, to its Go heap in use. The calls the node refuses cost it no
// lookup: it encodes the answers it holds and at most one more per
// connection.
func testHostileUnreadAnswers(t *testing.T) {
	const conns, calls, products, ids, goodCalls = 40, 100, 20_000, 1000, 100
	const maxRSS, heapMargin = 300 << 20, 16 << 20
	dir := t.TempDir()
	catalogtest.BuildSynthetic(t, dir, products, 1)
	var budget int // catalog.max_conn_unread_bytes of the node
	n, cl := startNode(t, dir, func(c *configs.Catalog) { c.MaxConns, budget = max(c.MaxConns, conns+1), c.MaxConnUnreadBytes })
	reqs := catalogtest.Workload{N: products, Groups: 1, IDs: ids}.Requests(64, 5)
	var size, goodProducts int
	goodCall := func(req *catalogpb.ProductMastersRequest) error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		r, err := cl.GetProductMasters(ctx, req)
		if err == nil && len(r.Product1S) == 0 {
			err = errors.New("empty answer")
		}
		if err == nil {
			size = proto.Size(r)
			goodProducts += len(r.Product1S)
		}
		return err
	}
	for _, req := range reqs {
		if err := goodCall(req); err != nil {
			t.Fatal(err)
		}
	}
	if size*calls < 4*budget {
		t.Fatalf("answers of %d bytes are too small to exceed catalog.max_conn_unread_bytes %d", size, budget)
	}
	self, err := procfs.NewProc(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	vmRSS := func() uint64 {
		st, err := self.NewStatus()
		if err != nil {
			t.Error(err)
			return 0
		}
		return st.VmRSS
	}
	heapInuse := func() uint64 {
		runtime.GC()
		runtime.GC() // and what sync.Pools kept through the first
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapInuse
	}
	// served counts the calls the node has answered, whatever the status;
	// encoded the product1s it has encoded answers with.
	counter := func(prefix string) int {
		total := 0
		for _, l := range strings.Split(metrics(t, n.AdminAddr()), "\n") {
			if strings.HasPrefix(l, prefix) {
				if f := strings.Fields(l); len(f) == 2 {
					v, _ := strconv.ParseFloat(f[1], 64)
					total += int(v)
				}
			}
		}
		return total
	}
	served := func() int { return counter("rtbd_catalog_server_requests_total{") }
	encoded := func() int { return counter(`rtbd_catalog_server_products_returned_total{list="product1"}`) }
	goroutines, heap, servedBefore := runtime.NumGoroutine(), heapInuse(), served()
	encodedBefore, goodBefore := encoded(), goodProducts

	var peak atomic.Uint64
	stop, sampled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			if r := vmRSS(); r > peak.Load() {
				peak.Store(r)
			}
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	var bad []*stallingConn
	for i := 0; i < conns; i++ {
		s := dialStalling(t, n.Addr())
		defer s.c.Close()
		for j := 0; j < calls; j++ {
			s.call(t, reqs[(i+j)%len(reqs)])
		}
		bad = append(bad, s)
	}
	for i := 0; i < goodCalls; i++ {
		if err := goodCall(reqs[i%len(reqs)]); err != nil {
			t.Errorf("well-behaved call %d during the attack: %v", i, err)
		}
	}
	// Every hostile call is either held or refused: the node is done
	// with all of them.
	var got int
	if !waitFor(func() bool { got = served() - servedBefore; return got >= conns*calls+goodCalls }) {
		t.Errorf("the node answered %d calls, want %d", got, conns*calls+goodCalls)
	}
	close(stop)
	<-sampled
	if r := max(peak.Load(), vmRSS()); r >= maxRSS && !raceEnabled {
		t.Errorf("VmRSS %d MiB during the attack, want under %d MiB", r>>20, maxRSS>>20)
	} else {
		t.Logf("VmRSS at most %d MiB during the attack", r>>20)
	}
	refused := 0
	for _, s := range bad {
		for id, st := range s.statuses() {
			if st != "8" {
				t.Errorf("stream %d: grpc-status %s, want 8 (RESOURCE_EXHAUSTED)", id, st)
			}
			refused++
		}
	}
	held := conns*calls - refused
	hostileEncoded := encoded() - encodedBefore - (goodProducts - goodBefore)
	t.Logf("hostile calls held %d, refused %d; answers of %d bytes; products encoded for them %d", held, refused, size, hostileEncoded)
	if hostileEncoded > (held+conns)*ids {
		t.Errorf("the node encoded %d products for %d held hostile calls of at most %d: refused calls cost it lookups", hostileEncoded, held, ids)
	}

	for _, s := range bad {
		s.c.Close()
	}
	var now int
	if !waitFor(func() bool { now = runtime.NumGoroutine(); return now <= goroutines+2 }) {
		buf := make([]byte, 1<<20)
		t.Fatalf("goroutines %d after the hostile client left, baseline %d:\n%s", now, goroutines, buf[:runtime.Stack(buf, true)])
	}
	var h uint64
	if !waitFor(func() bool { h = heapInuse(); return h <= heap+heapMargin }) {
		t.Errorf("Go heap in use %d MiB after the hostile client left, baseline %d MiB", h>>20, heap>>20)
	}
	t.Logf("Go heap in use after GC: %d MiB before the attack, %d MiB after; goroutines %d, %d", heap>>20, h>>20, goroutines, now)
	if err := goodCall(reqs[0]); err != nil {
		t.Fatal(err)
	}
}

// A connection whose client reads no answers holds at most
// catalog.max_conn_unread_bytes of them (and one answer more): further calls
// on it are RESOURCE_EXHAUSTED at once, while a client on another
// connection is answered.
func TestNodeBoundsUnreadAnswersPerConnection(t *testing.T) {
	const budget, calls = 64 << 10, 40
	n, cl := startFixtureNode(t, func(c *configs.Catalog) { c.MaxConnUnreadBytes = budget })
	req := bulkRequest()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r, err := cl.GetProductMasters(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	size := proto.Size(r)
	if size*calls < 2*budget {
		t.Fatalf("answers of %d bytes are too small to test a budget of %d", size, budget)
	}
	s := dialStalling(t, n.Addr())
	defer s.c.Close()
	for i := 0; i < calls; i++ {
		s.call(t, req)
	}
	// Every call is either held (no status: its answer waits for a window
	// the client never opens) or refused with RESOURCE_EXHAUSTED (8).
	held := func() int { return calls - len(s.statuses()) }
	if !waitFor(func() bool { return held()*size <= budget+size }) {
		t.Fatalf("a connection that reads nothing holds %d answers of %d bytes, budget %d", held(), size, budget)
	}
	for id, st := range s.statuses() {
		if st != "8" {
			t.Errorf("stream %d: grpc-status %s, want 8 (RESOURCE_EXHAUSTED)", id, st)
		}
	}
	if held() == 0 {
		t.Errorf("no answer held: the budget let none through")
	}
	if m := grep(metrics(t, n.AdminAddr()), `rtbd_catalog_server_requests_total{code="ResourceExhausted"}`); strings.HasSuffix(m, " 0") || m == "" {
		t.Errorf("refused calls not counted: %q", m)
	}
	// Answers read give their bytes back: the good connection is answered
	// well past its own budget.
	for i := 0; i < 4*budget/size+1; i++ {
		if _, err := cl.GetProductMasters(ctx, req); err != nil {
			t.Fatalf("call %d on another connection: %v", i, err)
		}
	}
}

// A connection whose client never reads its answers is closed after
// catalog.max_conn_age + catalog.max_conn_age_grace, freeing what it held.
func TestNodeClosesStalledConnectionAtMaxAge(t *testing.T) {
	n, _ := startFixtureNode(t, func(c *configs.Catalog) {
		c.MaxConnAge, c.MaxConnAgeGrace = 200*time.Millisecond, 200*time.Millisecond
	})
	s := dialStalling(t, n.Addr())
	defer s.c.Close()
	s.call(t, &catalogpb.ProductMastersRequest{ProductGroupId: catalogtest.TalkGroup, Product1QuantityAtMost: 3, Product1Ids: []int64{101}})
	select {
	case <-s.closed:
	case <-time.After(20 * time.Second):
		t.Fatal("a stalled connection outlived max_conn_age + max_conn_age_grace")
	}
}

func metrics(t testing.TB, addr string) string {
	t.Helper()
	// No kept-alive connection: its goroutines would count as the node's.
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func grep(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// BenchmarkNodeHostileClient measures a catalog node process's memory while
// one client holds RTBD_HOSTILE_CONNS connections (default 40) with
// RTBD_HOSTILE_CALLS calls each (default 100) that it never reads, asking
// for 1000 products a call (answers of a few hundred KiB), over an index of
// RTBD_HOSTILE_PRODUCTS products (default 20,000). A second client's calls
// run meanwhile. It reports the node's VmRSS before, during and after the
// attack, and after a forced garbage collection (and VmHWM), its Go heap
// in use and goroutines, the hostile calls held and refused, and the
// second client's failed calls (by gRPC code) and slowest; one measurement
// whatever b.N. The settle pauses are fixed: this is a measurement, not a
// test.
func BenchmarkNodeHostileClient(b *testing.B) {
	envInt := func(k string, def int) int {
		if v, err := strconv.Atoi(os.Getenv(k)); err == nil && v > 0 {
			return v
		}
		return def
	}
	conns, calls, products := envInt("RTBD_HOSTILE_CONNS", 40), envInt("RTBD_HOSTILE_CALLS", 100), envInt("RTBD_HOSTILE_PRODUCTS", 20_000)
	dir := b.TempDir()
	catalogtest.BuildSynthetic(b, dir, products, 1)
	helper, addr, admin := startHelperNode(b, dir)
	defer helper.Kill()
	proc, err := procfs.NewProc(helper.PID())
	if err != nil {
		b.Fatal(err)
	}
	rss := func() (rss, hwm uint64) {
		st, err := proc.NewStatus()
		if err != nil {
			b.Fatal(err)
		}
		return st.VmRSS, st.VmHWM
	}
	metric := func(name string) string {
		for _, l := range strings.Split(metrics(b, admin), "\n") {
			if v, ok := strings.CutPrefix(l, name+" "); ok {
				return v
			}
		}
		return "?"
	}
	goroutines := func() string { return metric("go_goroutines") }
	heap := func() string { return metric("go_memstats_heap_inuse_bytes") }
	// The node's work on the hostile calls: products it encoded and time
	// its handler took (refused calls included).
	encoded := func() float64 {
		v, _ := strconv.ParseFloat(metric(`rtbd_catalog_server_products_returned_total{list="product1"}`), 64)
		return v
	}
	handlerSeconds := func() float64 {
		v, _ := strconv.ParseFloat(metric("rtbd_catalog_server_request_seconds_sum"), 64)
		return v
	}
	cl := catalogtest.Client(b, addr)
	reqs := catalogtest.Workload{N: products, Groups: 1, IDs: 1000}.Requests(64, 5)
	// goodCalls makes n calls with a deadline of 1s each; errs counts the
	// failed ones by gRPC code, slowest is the longest call.
	var errs map[codes.Code]int
	var slowest time.Duration
	goodProducts := 0 // product1s the good client received
	goodCalls := func(n int) (failed int, answer int) {
		errs, slowest = map[codes.Code]int{}, 0
		for i := 0; i < n; i++ {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			start := time.Now()
			r, err := cl.GetProductMasters(ctx, reqs[i%len(reqs)])
			slowest = max(slowest, time.Since(start))
			cancel()
			if err != nil {
				failed++
				errs[status.Code(err)]++
			} else {
				answer = proto.Size(r)
				goodProducts += len(r.Product1S)
			}
		}
		return failed, answer
	}
	if failed, _ := goodCalls(len(reqs)); failed > 0 {
		b.Fatalf("%d warm-up calls failed", failed)
	}
	time.Sleep(time.Second)
	rssBefore, _ := rss()
	gBefore, heapBefore := goroutines(), heap()
	encBefore, secBefore, goodBefore := encoded(), handlerSeconds(), goodProducts

	var bad []*stallingConn
	for i := 0; i < conns; i++ {
		s := dialStalling(b, addr)
		defer s.c.Close()
		for j := 0; j < calls; j++ {
			s.call(b, reqs[(i+j)%len(reqs)])
		}
		bad = append(bad, s)
	}
	failed, answer := goodCalls(100)
	goodErrs, goodSlowest := errs, slowest
	time.Sleep(2 * time.Second)
	rssDuring, _ := rss()
	heapDuring := heap()
	enc, sec := encoded()-encBefore-float64(goodProducts-goodBefore), handlerSeconds()-secBefore
	refused := 0
	for _, s := range bad {
		refused += len(s.statuses())
	}
	held := conns*calls - refused
	for _, s := range bad {
		s.c.Close()
	}
	time.Sleep(2 * time.Second)
	rssAfter, hwm := rss()
	gAfter, heapAfter := goroutines(), heap()
	// A node with nothing to do runs no garbage collection: ask for one
	// (pprof's heap profile with gc=1, on the admin listener) to tell the
	// memory still held from the garbage not yet collected.
	// Twice: sync.Pool's caches outlive one collection.
	gc := "no pprof"
	for range 2 {
		if resp, err := http.Get("http://" + admin + "/debug/pprof/heap?gc=1&debug=1"); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			gc = resp.Status
		}
	}
	time.Sleep(time.Second)
	rssGC, _ := rss()
	heapGC := heap()
	line := fmt.Sprintf("HOSTILE conns=%d calls=%d answer=%d bytes held=%d refused=%d good-failed=%d/100 %v good-slowest=%v VmRSS before=%d kB during=%d kB after=%d kB after-gc=%d kB VmHWM=%d kB heap-inuse before=%s during=%s after=%s after-gc=%s (gc: %s) goroutines before=%s after=%s encoded-products=%.0f handler-seconds=%.2f",
		conns, calls, answer, held, refused, failed, goodErrs, goodSlowest.Round(time.Millisecond), rssBefore>>10, rssDuring>>10, rssAfter>>10, rssGC>>10, hwm>>10, heapBefore, heapDuring, heapAfter, heapGC, gc, gBefore, gAfter, enc, sec)
	b.Log(line)
	fmt.Println(line)
	b.ReportMetric(float64(rssDuring), "VmRSS-during-bytes")
	b.ReportMetric(float64(hwm), "VmHWM-bytes")
	b.ReportMetric(float64(failed), "good-failed")
}
