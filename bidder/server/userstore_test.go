package server

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/rtbd/rtbd/bidder"
	"github.com/rtbd/rtbd/bidder/internal/biddertest"
	"github.com/rtbd/rtbd/bidder/spend/spendtest"
	"github.com/rtbd/rtbd/configs"
	"github.com/rtbd/rtbd/rtb"
)

// TestServerUsersRedis: with user.store redis two bidders share the
// profiles (one written through the first makes the second bid), and a
// Redis that stops answering, then is gone, turns the bid into a no-bid
// answered under the request's deadline, not a stall.
func TestServerUsersRedis(t *testing.T) {
	r := spendtest.StartRedis(t, spendtest.RedisOptions{})
	ctx := context.Background()
	n := 0
	start := func() *Server {
		cfg := testConfig(t)
		n++ // two bidders of one fleet: two instance ids
		for k, v := range map[string]string{"redis.addr": r.Addr, "user.store": configs.UserStoreRedis, "user.ttl": "1h",
			"spend.instance_id": fmt.Sprintf("bidder-%d", n)} {
			if err := cfg.Set(k, v); err != nil {
				t.Fatal(err)
			}
		}
		cfg.Bidder.NBRBody = true
		s, err := Start(cfg, zaptest.NewLogger(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Shutdown(ctx) })
		return s
	}
	a, b := start(), start()
	if err := a.Users().Put(ctx, userBulk, biddertest.BulkProfile()); err != nil {
		t.Fatal(err)
	}
	body := bannerRequest(t)
	bid := func(s *Server) (nbr int, bids int, took time.Duration) {
		t.Helper()
		t0 := time.Now()
		st, resp := httpDo(t, "POST", "http://"+s.Addr()+bidder.PathBid, body)
		took = time.Since(t0)
		var br struct {
			NBR     int `json:"nbr"`
			SeatBid []struct{ Bid []json.RawMessage }
		}
		if err := json.Unmarshal(resp, &br); st != 200 || err != nil {
			t.Fatalf("bid: %d %v %.300s", st, err, resp)
		}
		return br.NBR, len(br.SeatBid), took
	}
	if nbr, n, _ := bid(b); n == 0 {
		t.Fatalf("bidder b does not bid for a profile written through bidder a (nbr %d)", nbr)
	}

	r.Pause() // accepts connections, answers nothing
	nbr, n, took := bid(b)
	r.Resume()
	t.Logf("Redis paused: nbr %d in %v", nbr, took)
	if n != 0 || nbr != int(rtb.NoBidDeadline) {
		t.Fatalf("Redis paused: %d seat bids, nbr %d; want a no-bid, nbr %d (deadline)", n, nbr, rtb.NoBidDeadline)
	}

	r.Kill()
	nbr, n, took = bid(b)
	t.Logf("Redis down: nbr %d in %v", nbr, took)
	if n != 0 || nbr == 0 {
		t.Fatalf("Redis down: %d seat bids, nbr %d; want a no-bid", n, nbr)
	}
}
