package shading_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rtbd/rtbd/bidder/shading"
	"github.com/rtbd/rtbd/bidder/spend/redisstore"
	"github.com/rtbd/rtbd/bidder/spend/spendtest"
)

// adminView is GET /admin/shading's JSON.
type adminView struct {
	Enabled  bool                  `json:"enabled"`
	Fleet    *shading.FleetView    `json:"fleet"`
	Segments []shading.SegmentView `json:"segments"`
}

func getView(t *testing.T, s *shading.Shader) (adminView, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	shading.Handler(s, []string{"x"}).ServeHTTP(rec, httptest.NewRequest("GET", "/admin/shading", nil))
	var v adminView
	if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
		t.Fatalf("GET /admin/shading: %v: %s", err, rec.Body)
	}
	return v, rec.Body.String()
}

func segmentView(t *testing.T, v adminView, id shading.SegmentID) shading.SegmentView {
	t.Helper()
	for _, g := range v.Segments {
		if g.ID == fmt.Sprintf("%08x", uint32(id)) {
			return g
		}
	}
	t.Fatalf("segment %08x not in the view", uint32(id))
	return shading.SegmentView{}
}

// TestFleetView: /admin/shading shows the sharing with the fleet against a
// real redis-server: off without Options.Fleet; after Syncs the store, the
// last success, the counts, the read-back and each segment's own counts
// beside the fleet's; with the store down the error, the failed Sync, the
// counts kept pending and a stale last success; then the recovery.
func TestFleetView(t *testing.T) {
	if v, _ := getView(t, shading.New(shading.Options{})); !v.Enabled || v.Fleet == nil || v.Fleet.Enabled {
		t.Errorf("a Shader without a fleet: enabled %v, fleet %+v; want shading on, the fleet off", v.Enabled, v.Fleet)
	}
	if v, _ := getView(t, nil); v.Enabled || v.Fleet != nil {
		t.Errorf("no Shader: %+v, want shading off, no fleet", v)
	}

	r := spendtest.StartRedis(t, spendtest.RedisOptions{})
	rdb := redis.NewClient(&redis.Options{Addr: r.Addr, ContextTimeoutEnabled: true, DialTimeout: time.Second, MaxRetries: -1})
	t.Cleanup(func() { _ = rdb.Close() })
	st := redisstore.New(rdb, redisstore.Options{Prefix: "view:"})
	opts := func() shading.Options {
		return shading.Options{Explore: -1, Exchanges: []shading.Exchange{{NoticeWait: time.Second}},
			Fleet: &shading.FleetOptions{Slot: time.Minute, Interval: 5 * time.Second}}
	}
	a, b := shading.New(opts()), shading.New(opts())
	id := shading.Segment(0, "pub", shading.FormatBanner, 300, 250)
	now := time.Now().Truncate(time.Minute).Add(-20 * time.Second) // the 40th second of a slot, in the past
	for range 40 {
		a.Bid(id, 2_000_000, now)
	}
	for range 10 {
		b.Bid(id, 2_000_000, now)
	}
	now = now.Add(3 * time.Second)
	a.Refresh(now) // settles the bids: pending for the next Sync
	b.Refresh(now)

	v, _ := getView(t, a)
	f := *v.Fleet
	if !f.Enabled || f.Store != "" || f.LastOK != nil || f.Stale || f.Pending != 3*40 || f.PendingSegments != 3 ||
		f.Slot != "1m0s" || f.Interval != "5s" || f.LastSync != nil {
		t.Errorf("before any Sync: %+v; want enabled, no store yet, 120 counts pending in 3 segments, not stale", f)
	}
	if g := segmentView(t, v, id); g.Fleet == nil || g.Fleet.Read || g.Fleet.Pending != 40 || g.Fleet.OwnBids != 40 || g.Fleet.FleetShare != 0 {
		t.Errorf("segment before any Sync: %+v; want 40 own bids pending, nothing of the fleet's", g.Fleet)
	}

	ctx := context.Background()
	for _, s := range []*shading.Shader{a, b} {
		if _, err := s.Sync(ctx, st, now); err != nil {
			t.Fatal(err)
		}
	}
	okAt := now.Add(2 * time.Second)
	if _, err := a.Sync(ctx, st, okAt); err != nil {
		t.Fatal(err)
	}
	a.Refresh(okAt)
	v, body := getView(t, a)
	t.Logf("after the Syncs: %s", body)
	f = *v.Fleet
	if f.Store != "redisstore.Store" || f.LastOK == nil || !f.LastOK.Equal(okAt) || f.SyncsOK != 2 || f.SyncsFailed != 0 ||
		f.Pending != 0 || f.PendingSegments != 0 || f.LastError != "" {
		t.Errorf("after 2 Syncs: %+v; want store redisstore.Store, last ok %v, 2 ok, nothing pending", f, okAt)
	}
	if l := f.LastSync; l == nil || l.Error != "" || l.Load || !l.At.Equal(okAt) || l.Segments != 3 || l.Slots < 1 ||
		l.Keys != 3*l.Slots || l.Calls != 1 || l.Entries != 3 || l.Flushed != 0 || l.OldestSlot.IsZero() {
		t.Errorf("the last Sync: %+v; want 3 segments read over its slots in 1 call, 3 entries found", l)
	}
	if s := a.FleetSnapshot(okAt.Add(4 * time.Second)); s.Stale || s.AgeSeconds == nil || *s.AgeSeconds != 4 {
		t.Errorf("4s after the last Sync: stale %v, age %v; want fresh, 4s", s.Stale, s.AgeSeconds)
	}
	g := segmentView(t, v, id)
	if math.Abs(g.Bids-50) > 1 || g.Fleet == nil || !g.Fleet.Read || g.Fleet.Pending != 0 ||
		math.Abs(g.Fleet.OwnBids-g.Bids*0.8) > 1e-3 || math.Abs(g.Fleet.FleetShare-0.2) > 1e-4 {
		t.Errorf("segment after the Syncs: bids %v, fleet %+v; want ~50 bids, 40 of them (decayed alike) own, fleet share 0.2", g.Bids, g.Fleet)
	}

	// A bidder that starts loads the fleet's counts: all of them the fleet's.
	c := shading.New(opts())
	if _, err := c.Load(ctx, st, okAt); err != nil {
		t.Fatal(err)
	}
	vc, _ := getView(t, c)
	if f := *vc.Fleet; f.LoadsOK != 1 || f.SyncsOK != 0 || f.LastSync == nil || !f.LastSync.Load || f.LastSync.Segments != 3 {
		t.Errorf("after a Load: %+v; want 1 load of 3 segments", f)
	}
	if g := segmentView(t, vc, id); g.Fleet == nil || !g.Fleet.Read || g.Fleet.OwnBids != 0 || g.Fleet.FleetShare != 1 {
		t.Errorf("a loaded segment: %+v; want none own, fleet share 1", g.Fleet)
	}

	// The store goes down: the Sync fails, its counts stay pending, the
	// view shows the error and a stale last success.
	r.Kill()
	for range 5 {
		a.Bid(id, 2_000_000, okAt)
	}
	failAt := okAt.Add(5 * time.Second)
	a.Refresh(failAt)
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	_, err := a.Sync(sctx, st, failAt)
	cancel()
	if err == nil {
		t.Fatal("Sync with redis-server down: no error")
	}
	v, body = getView(t, a)
	t.Logf("with the store down: %s", body)
	f = *v.Fleet
	if f.SyncsOK != 2 || f.SyncsFailed != 1 || !f.Stale || f.LastOK == nil || !f.LastOK.Equal(okAt) ||
		f.LastError != err.Error() || f.LastErrorOp != "sync" || f.LastErrorAt == nil || !f.LastErrorAt.Equal(failAt) ||
		f.Pending != 3*5 || f.PendingSegments != 3 || f.LastSync == nil || f.LastSync.Error == "" || f.LastSync.Flushed != 0 {
		t.Errorf("with the store down: %+v; want 1 failed Sync, its error, the last ok still %v, stale, 15 counts pending", f, okAt)
	}
	if s := a.FleetSnapshot(failAt.Add(time.Minute)); !s.Stale || s.AgeSeconds == nil || *s.AgeSeconds != 65 {
		t.Errorf("a minute later: stale %v, age %v; want stale, 65s", s.Stale, s.AgeSeconds)
	}
	if g := segmentView(t, v, id); g.Fleet == nil || g.Fleet.Pending != 5 {
		t.Errorf("segment with the store down: %+v; want its 5 bids pending", g.Fleet)
	}

	// Back up: the next Sync writes them; the error stays, with its time.
	r.Restart()
	backAt := failAt.Add(5 * time.Second)
	if _, err := a.Sync(ctx, st, backAt); err != nil {
		t.Fatal(err)
	}
	f = a.FleetSnapshot(backAt)
	if f.Stale || f.SyncsOK != 3 || f.SyncsFailed != 1 || !f.LastOK.Equal(backAt) || f.Pending != 0 || f.LastError == "" ||
		f.LastSync.Flushed != 3 {
		t.Errorf("after the store is back: %+v; want fresh, 3 ok and 1 failed, nothing pending, the last error kept", f)
	}
	if f = a.FleetSnapshot(backAt.Add(11 * time.Second)); !f.Stale {
		t.Errorf("11s after the last Sync (interval 5s): not stale")
	}
}
