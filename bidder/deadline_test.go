package bidder

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/rtbd/rtbd/bidder/user"
	"github.com/rtbd/rtbd/rtb"
)

// TestDeadlineSlowCatalog: with a catalog slower than the budget (a test
// wrapper adding 2s per lookup), the answer is a no-bid with nbr 508, sent
// well before the slow lookup would have ended, and counted as a deadline
// miss. Timing is checked with generous slack only.
func TestDeadlineSlowCatalog(t *testing.T) {
	slow := time.Second * 2
	f := newFixture(t, func(o *Options) {
		o.Products = &slowProducts{ProductStore: o.Products, delay: slow}
		o.NBRBody = true
	})
	body := withUser(t, readFile(t, filepath.Join(specDir, "request-1-simple-banner.json")), userBulk, "tmax", 80)
	start := time.Now()
	r := f.bid(body)
	took := time.Since(start)
	var nb struct {
		ID  string `json:"id"`
		NBR int    `json:"nbr"`
	}
	if r.status != 200 || json.Unmarshal(r.body, &nb) != nil || nb.NBR != int(rtb.NoBidDeadline) {
		t.Fatalf("status %d body %s, want a no-bid with nbr 508", r.status, r.body)
	}
	if nb.ID != "80ce30c53c16e6ede735f123ef6e32361bfc7b22" {
		t.Errorf("no-bid id %q", nb.ID)
	}
	if took >= slow {
		t.Errorf("answer took %s: it waited for the slow catalog (%s) instead of the deadline (tmax 80ms)", took, slow)
	}
	t.Logf("tmax 80ms, margin 20ms, catalog delay %s: no-bid after %s", slow, took)
	if got := f.counter("rtbd_bidder_deadline_misses_total", "stage", "catalog"); got != 1 {
		t.Errorf("deadline_misses{catalog} = %v, want 1", got)
	}
	if got := f.counter("rtbd_bidder_nobids_total", "nbr", "deadline"); got != 1 {
		t.Errorf("nobids{deadline} = %v, want 1", got)
	}
	if got := f.counter("rtbd_bidder_catalog_errors_total", "kind", "deadline"); got != 1 {
		t.Errorf("catalog_errors{deadline} = %v, want 1", got)
	}
}

// TestDeadlineTMaxTooSmall: a tmax that leaves less than MinBudget after
// the margin is a no-bid at once, without any lookup.
func TestDeadlineTMaxTooSmall(t *testing.T) {
	calls := make(chan struct{}, 1)
	f := newFixture(t, func(o *Options) {
		o.Products = &slowProducts{ProductStore: o.Products, calls: calls}
	})
	body := withUser(t, readFile(t, filepath.Join(specDir, "request-1-simple-banner.json")), userBulk, "tmax", 21)
	r := f.bid(body)
	if r.status != 204 {
		t.Fatalf("status %d, want 204", r.status)
	}
	select {
	case <-calls:
		t.Error("the catalog was called for a request with no time left")
	default:
	}
	if got := f.counter("rtbd_bidder_deadline_misses_total", "stage", "tmax"); got != 1 {
		t.Errorf("deadline_misses{tmax} = %v, want 1", got)
	}
	if got := f.counter("rtbd_bidder_nobids_total", "nbr", "deadline"); got != 1 {
		t.Errorf("nobids{deadline} = %v, want 1", got)
	}
	// A tmax above max_tmax is capped, not refused.
	body = withUser(t, readFile(t, filepath.Join(specDir, "request-1-simple-banner.json")), userBulk, "tmax", 100000)
	if r := f.bid(body); r.status != 200 {
		t.Errorf("large tmax: status %d", r.status)
	}
}

// TestDeadlineMarginRatio: with TMaxMarginRatio the margin shrinks with a
// short tmax, so a 20ms tmax (4ms margin at 0.2) is bid on; with the ratio
// off the fixed 20ms margin leaves nothing and it is a no-bid at once.
func TestDeadlineMarginRatio(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		ratio       float64
		tmax        int64
		want, wantM time.Duration
	}{
		{0.2, 20, 16 * ms, 4 * ms},
		{0.2, 0, 80 * ms, 20 * ms},       // default tmax 100ms: 20ms is the smaller
		{0.2, 60, 48 * ms, 12 * ms},      // 0.2 x 60ms
		{0.2, 100000, 480 * ms, 20 * ms}, // capped at max_tmax 500ms
		{0.5, 30, 15 * ms, 15 * ms},
		{0, 20, 0, 20 * ms},
		{0, 60, 40 * ms, 20 * ms},
	} {
		b := &Bidder{opts: Options{DefaultTMax: 100 * ms, MaxTMax: 500 * ms, TMaxMargin: 20 * ms, TMaxMarginRatio: tc.ratio}}
		if got := b.budget(tc.tmax); got != tc.want {
			t.Errorf("ratio %v tmax %dms: budget %s, want %s", tc.ratio, tc.tmax, got, tc.want)
		}
		if got := b.margin(b.tmax(tc.tmax)); got != tc.wantM {
			t.Errorf("ratio %v tmax %dms: margin %s, want %s", tc.ratio, tc.tmax, got, tc.wantM)
		}
	}

	body := withUser(t, readFile(t, filepath.Join(specDir, "request-1-simple-banner.json")), userBulk, "tmax", 20)
	t.Run("ratio 0.2", func(t *testing.T) {
		f := newFixture(t, func(o *Options) { o.TMaxMarginRatio = 0.2 })
		// 16ms is plenty for an in-memory auction, but the machine may be
		// busy: a bid in any of three tries shows the margin let it through.
		bids := 0
		for range 3 {
			if r := f.bid(body); r.status == 200 {
				bids++
				break
			}
		}
		if bids == 0 {
			t.Error("tmax 20ms with tmax_margin_ratio 0.2: no bid in three tries")
		}
		if got := f.counter("rtbd_bidder_deadline_misses_total", "stage", "tmax"); got != 0 {
			t.Errorf("deadline_misses{tmax} = %v, want 0: the 4ms margin leaves 16ms", got)
		}
	})
	t.Run("ratio 0", func(t *testing.T) {
		f := newFixture(t, nil)
		if r := f.bid(body); r.status != 204 {
			t.Errorf("tmax 20ms with the ratio off: status %d, want 204 (the 20ms margin leaves nothing)", r.status)
		}
		if got := f.counter("rtbd_bidder_deadline_misses_total", "stage", "tmax"); got != 1 {
			t.Errorf("deadline_misses{tmax} = %v, want 1", got)
		}
	})
}

// slowUsers is a TEST WRAPPER around the real user store that delays Get
// (honouring ctx).
type slowUsers struct {
	UserStore
	delay time.Duration
}

func (s slowUsers) Get(ctx context.Context, uid string, p *user.Profile) (bool, error) {
	t := time.NewTimer(s.delay)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return false, ctx.Err()
	}
	return s.UserStore.Get(ctx, uid, p)
}

func TestDeadlineSlowUserStore(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.Users = slowUsers{UserStore: o.Users, delay: 2 * time.Second} })
	body := withUser(t, readFile(t, filepath.Join(specDir, "request-1-simple-banner.json")), userBulk, "tmax", 60)
	start := time.Now()
	if r := f.bid(body); r.status != 204 {
		t.Fatalf("status %d, want 204", r.status)
	}
	if took := time.Since(start); took >= 2*time.Second {
		t.Errorf("took %s: waited for the slow user store", took)
	}
	if got := f.counter("rtbd_bidder_deadline_misses_total", "stage", "user"); got != 1 {
		t.Errorf("deadline_misses{user} = %v, want 1", got)
	}
}

// blockingProducts is a TEST WRAPPER that holds every lookup until release
// is closed (or ctx ends), to keep requests in flight.
type blockingProducts struct {
	ProductStore
	entered chan struct{}
	release chan struct{}
}

func (s *blockingProducts) GetProductMasters(ctx context.Context, req *catalogpbReq) (*catalogpbResp, error) {
	s.entered <- struct{}{}
	select {
	case <-s.release:
	case <-ctx.Done():
		return nil, errors.New("blocked past the deadline")
	}
	return s.ProductStore.GetProductMasters(ctx, req)
}

// TestOverload: with MaxInFlight requests in flight, the next one is shed
// at once: a no-bid with nbr 507 (or 503 when so configured), counted.
func TestOverload(t *testing.T) {
	for _, use503 := range []bool{false, true} {
		bp := &blockingProducts{entered: make(chan struct{}, 2), release: make(chan struct{})}
		f := newFixture(t, func(o *Options) {
			bp.ProductStore = o.Products
			o.Products = bp
			o.MaxInFlight = 2
			o.NBRBody = true
			o.Overload503 = use503
		})
		body := withUser(t, readFile(t, filepath.Join(specDir, "request-1-simple-banner.json")), userBulk, "tmax", 5000)
		var wg sync.WaitGroup
		statuses := make(chan int, 2)
		for i := 0; i < 2; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				statuses <- f.bid(body).status
			}()
		}
		for i := 0; i < 2; i++ {
			select {
			case <-bp.entered:
			case <-time.After(10 * time.Second):
				t.Fatal("requests did not reach the catalog")
			}
		}
		if n := f.b.inFlight.N(); n != 2 {
			t.Errorf("in flight %d, want 2", n)
		}
		if g := f.counter("rtbd_bidder_in_flight"); g != 2 {
			t.Errorf("in_flight gauge %v, want 2", g)
		}
		r := f.bid(body)
		if use503 {
			if r.status != 503 {
				t.Errorf("shed: status %d, want 503", r.status)
			}
		} else {
			var nb struct {
				ID  string `json:"id"`
				NBR int    `json:"nbr"`
			}
			if r.status != 200 || json.Unmarshal(r.body, &nb) != nil || nb.NBR != 507 || nb.ID != "80ce30c53c16e6ede735f123ef6e32361bfc7b22" {
				t.Errorf("shed: status %d body %s, want a no-bid with nbr 507 and the id", r.status, r.body)
			}
		}
		close(bp.release)
		wg.Wait()
		close(statuses)
		for s := range statuses {
			if s != 200 {
				t.Errorf("an in-flight request got %d", s)
			}
		}
		if got := f.counter("rtbd_bidder_shed_total", "reason", "in_flight"); got != 1 {
			t.Errorf("shed_total = %v, want 1", got)
		}
		if n := f.b.inFlight.N(); n != 0 {
			t.Errorf("in flight after: %d", n)
		}
	}
}
