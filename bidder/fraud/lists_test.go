package fraud_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/rtbd/rtbd/bidder/fraud"
	"github.com/rtbd/rtbd/bidder/internal/metrictest"
	"github.com/rtbd/rtbd/bidder/spend/spendtest"
	"github.com/rtbd/rtbd/rtb"
)

func client(t testing.TB, addr string) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true, DialTimeout: time.Second, MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return c
}

func fill(t testing.TB, rdb *redis.Client) {
	t.Helper()
	c := ctx(t)
	for key, vals := range map[string][]any{
		"rtbd:fraud:domains":     {"bad.com", "*.ads.example"},
		"rtbd:fraud:bundles":     {"com.fraud.app"},
		"rtbd:fraud:ips":         {"192.0.2.1", "198.51.100.0/24", "2001:db8::/32", "oops"},
		"rtbd:fraud:datacenters": {"203.0.113.0/24"},
		"rtbd:fraud:ifas":        {"dead-beef"},
		"rtbd:fraud:uids":        {"bot"},
	} {
		if err := rdb.SAdd(c, key, vals...).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := rdb.Incr(c, "rtbd:fraud:version").Err(); err != nil {
		t.Fatal(err)
	}
}

func newLists(t testing.TB, rdb *redis.Client, o fraud.Options) *fraud.Lists {
	l, err := fraud.New(rdb, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	return l
}

// startFilled starts a redis-server (ro), fills it with the test lists and
// returns it with a client and Lists (o) started on it.
func startFilled(t testing.TB, ro spendtest.RedisOptions, o fraud.Options) (*spendtest.Redis, *redis.Client, *fraud.Lists) {
	t.Helper()
	r := spendtest.StartRedis(t, ro)
	rdb := client(t, r.Addr)
	fill(t, rdb)
	l := newLists(t, rdb, o)
	if err := l.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	return r, rdb, l
}

func TestLoadAndCheck(t *testing.T) {
	reg := prometheus.NewRegistry()
	_, _, l := startFilled(t, spendtest.RedisOptions{}, fraud.Options{Registerer: reg, CheckInterval: time.Hour})
	for _, c := range []struct {
		site, bundle, ip, ifa, uid string
		want                       rtb.NoBidReason
	}{
		{site: "www.bad.com", want: 7},
		{site: "x.ads.example", want: 7},
		{bundle: "COM.FRAUD.APP", want: 7},
		{ip: "192.0.2.1", want: 4},
		{ip: "198.51.100.77", want: 4},
		{ip: "2001:db8:1::1", want: 4},
		{ip: "203.0.113.5", want: 5},
		{ifa: "DEAD-BEEF", want: 4},
		{uid: "bot", want: 4},
		{site: "good.com", bundle: "com.good", ip: "8.8.8.8", ifa: "x", uid: "human"},
	} {
		blocked, nbr := l.Check(c.site, c.bundle, c.ip, c.ifa, c.uid)
		if blocked != (c.want != 0) || nbr != c.want {
			t.Errorf("Check(%+v) = %v %d, want nbr %d", c, blocked, nbr, c.want)
		}
	}
	s := l.Snapshot()
	if s.Version != 1 || s.Sizes[fraud.ListIPs] != 3 {
		t.Errorf("snapshot version %d sizes %v", s.Version, s.Sizes)
	}
	if n := metrictest.Must(t, reg, "rtbd_fraud_blocked_total", "list", "ips"); n != 3 {
		t.Errorf("blocked{ips} = %v, want 3", n)
	}
	if n := metrictest.Must(t, reg, "rtbd_fraud_rejected_entries_total", "list", "ips"); n != 1 {
		t.Errorf("rejected{ips} = %v, want 1", n)
	}
}

// TestBigSetSSCAN: a 60k-entry set loads completely through many SSCAN pages.
func TestBigSetSSCAN(t *testing.T) {
	r := spendtest.StartRedis(t, spendtest.RedisOptions{})
	rdb := client(t, r.Addr)
	const n = 60000
	pipe := rdb.Pipeline()
	for i := range n {
		pipe.SAdd(ctx(t), "rtbd:fraud:uids", fmt.Sprintf("u%06d", i))
	}
	if _, err := pipe.Exec(ctx(t)); err != nil {
		t.Fatal(err)
	}
	l := newLists(t, rdb, fraud.Options{ScanCount: 500, CheckInterval: time.Hour})
	if err := l.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if got := l.Snapshot().Sizes[fraud.ListUIDs]; got != n {
		t.Fatalf("loaded %d uids, want %d", got, n)
	}
	if b, _ := l.Check("", "", "", "", "u059999"); !b {
		t.Error("last uid not blocked")
	}
	// MaxEntries: a list bigger than allowed fails the load, lists kept.
	l2 := newLists(t, rdb, fraud.Options{MaxEntries: 1000, CheckInterval: time.Hour})
	if err := l2.Start(ctx(t)); !errors.Is(err, fraud.ErrTooBig) {
		t.Errorf("Start with a too-big list: %v, want ErrTooBig", err)
	}
}

// TestRefresh: a version change is picked up by the loop; without a version
// change the periodic full reload still happens.
func TestRefresh(t *testing.T) {
	_, rdb, l := startFilled(t, spendtest.RedisOptions{}, fraud.Options{CheckInterval: 10 * time.Millisecond, ReloadInterval: time.Hour})
	if b, _ := l.Check("new.com", "", "", "", ""); b {
		t.Fatal("new.com blocked before it was added")
	}
	rdb.SAdd(ctx(t), "rtbd:fraud:domains", "new.com")
	time.Sleep(50 * time.Millisecond)
	if b, _ := l.Check("new.com", "", "", "", ""); b {
		t.Fatal("reloaded without a version change or reload interval")
	}
	rdb.Incr(ctx(t), "rtbd:fraud:version")
	spendtest.WaitFor(t, 5*time.Second, "the version change to load", func() bool { b, _ := l.Check("new.com", "", "", "", ""); return b })

	l2 := newLists(t, rdb, fraud.Options{CheckInterval: 10 * time.Millisecond, ReloadInterval: 30 * time.Millisecond})
	if err := l2.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	rdb.SAdd(ctx(t), "rtbd:fraud:uids", "quiet-add")
	spendtest.WaitFor(t, 5*time.Second, "the periodic reload", func() bool { b, _ := l2.Check("", "", "", "", "quiet-add"); return b })
}

// TestRedisDownSlowRestart: the lists in use survive Redis
// being killed, frozen and restarted; Check keeps answering from memory;
// errors are counted; syncing resumes when Redis is back.
func TestRedisDownSlowRestart(t *testing.T) {
	reg := prometheus.NewRegistry()
	r, rdb, l := startFilled(t, spendtest.RedisOptions{Persist: true}, fraud.Options{Registerer: reg, CheckInterval: 10 * time.Millisecond, CheckTimeout: 100 * time.Millisecond, LoadTimeout: 200 * time.Millisecond})
	errs := func() float64 { return metrictest.Sum(t, reg, "rtbd_fraud_syncs_total", "result", "error") }
	blocked := func() bool { b, nbr := l.Check("bad.com", "", "", "", ""); return b && nbr == 7 }
	checkFast := func(what string) {
		t.Helper()
		done := make(chan bool)
		go func() {
			ok := true
			for range 10000 {
				ok = ok && blocked()
			}
			done <- ok
		}()
		select {
		case ok := <-done:
			if !ok {
				t.Fatalf("%s: the last lists were dropped", what)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: Check blocked on Redis", what)
		}
	}
	r.Kill()
	e0 := errs()
	spendtest.WaitFor(t, 5*time.Second, "errors while Redis is down", func() bool { return errs() > e0 })
	checkFast("redis down")

	r.Restart()
	rdb.SAdd(ctx(t), "rtbd:fraud:domains", "after-restart.com")
	rdb.Incr(ctx(t), "rtbd:fraud:version")
	spendtest.WaitFor(t, 5*time.Second, "sync to resume after restart", func() bool { b, _ := l.Check("after-restart.com", "", "", "", ""); return b })
	checkFast("after restart")

	r.Pause()
	e1 := errs()
	spendtest.WaitFor(t, 5*time.Second, "errors while Redis is frozen", func() bool { return errs() > e1 })
	checkFast("redis frozen")
	r.Resume()
	rdb.SAdd(ctx(t), "rtbd:fraud:uids", "after-resume")
	rdb.Incr(ctx(t), "rtbd:fraud:version")
	spendtest.WaitFor(t, 5*time.Second, "sync to resume after the freeze", func() bool { b, _ := l.Check("", "", "", "", "after-resume"); return b })
}

// TestEmptyRedisRefused: a Redis restarted without its data does not wipe
// the lists in use, unless asked to.
func TestEmptyRedisRefused(t *testing.T) {
	r, _, l := startFilled(t, spendtest.RedisOptions{}, fraud.Options{CheckInterval: time.Hour})
	r.Kill()
	r.Restart() // no persistence: empty
	if err := l.Reload(ctx(t), false); !errors.Is(err, fraud.ErrEmptyRedis) {
		t.Fatalf("Reload from an empty Redis: %v, want ErrEmptyRedis", err)
	}
	if b, _ := l.Check("bad.com", "", "", "", ""); !b {
		t.Fatal("lists dropped")
	}
	if err := l.Reload(ctx(t), true); err != nil {
		t.Fatal(err)
	}
	if b, _ := l.Check("bad.com", "", "", "", ""); b {
		t.Fatal("allowEmpty did not empty the lists")
	}
}

func TestStartRedisDown(t *testing.T) {
	r := spendtest.StartRedis(t, spendtest.RedisOptions{Persist: true})
	rdb := client(t, r.Addr)
	fill(t, rdb)
	r.Kill()
	l := newLists(t, rdb, fraud.Options{CheckInterval: 10 * time.Millisecond, LoadTimeout: 200 * time.Millisecond, CheckTimeout: 100 * time.Millisecond})
	c, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if err := l.Start(c); err == nil {
		t.Fatal("Start with Redis down returned no error")
	}
	if b, _ := l.Check("bad.com", "", "", "", ""); b {
		t.Fatal("lists from nowhere")
	}
	r.Restart()
	spendtest.WaitFor(t, 5*time.Second, "the first load once Redis is up", func() bool { b, _ := l.Check("bad.com", "", "", "", ""); return b })
}
