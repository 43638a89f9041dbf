package bidder

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/rtbd/rtbd/bidder/user"
	"github.com/rtbd/rtbd/internal/clocktest"
	"github.com/rtbd/rtbd/overload"
)

// fromCtx is a GET of path with the uid cookie, from peer ip (and
// X-Forwarded-For xff when not "").
func fromCtx(path, cookie, ip, xff string) *fasthttp.RequestCtx {
	var req fasthttp.Request
	req.Header.SetMethod(fasthttp.MethodGet)
	req.SetRequestURI(path)
	if cookie != "" {
		req.Header.Set(fasthttp.HeaderCookie, cookie)
	}
	if xff != "" {
		req.Header.Set(fasthttp.HeaderXForwardedFor, xff)
	}
	var rc fasthttp.RequestCtx
	rc.Init(&req, &net.TCPAddr{IP: net.ParseIP(ip), Port: 40000}, nil)
	return &rc
}

func limitedFixture(t *testing.T, edit func(*Options)) *fixture {
	return newFixture(t, func(o *Options) {
		o.Exchanges = []Exchange{{Name: "ssp1"}}
		o.UserID.SyncRedirectHosts = []string{"ssp1.example"}
		l := overload.Limit{Rate: 1, Burst: 5}
		o.RateLimits = RateLimitOptions{Event: l, UserSync: l, Match: l, Sources: 1024}
		if edit != nil {
			edit(o)
		}
	})
}

// For each of /event, /usersync and /match: a source gets its burst, then
// 429 (counted, nothing written: the endpoint's own results do not move
// and a limited /match stores no entry); another source is still served.
func TestRateLimitPerSource(t *testing.T) {
	redirect := url.QueryEscape("https://ssp1.example/ok")
	for _, c := range []struct {
		endpoint, result string
		path             func(i int) string
	}{
		{"event", "rtbd_bidder_events_total", func(i int) string { return fmt.Sprintf("/event?pg=1&pid=%d&ev=view", 1+i) }},
		{"usersync", "rtbd_bidder_usersyncs_total", func(i int) string { return "/usersync?x=ssp1&redirect=" + redirect }},
		{"match", "rtbd_bidder_matches_total", func(i int) string { return fmt.Sprintf("/match?x=ssp1&xuid=x-%d", i) }},
	} {
		t.Run(c.endpoint, func(t *testing.T) {
			f := limitedFixture(t, nil)
			h := f.b.Handler()
			cookie := "rtbd_uid=" + userBulk
			const flooder, other = "192.0.2.1", "198.51.100.7"
			for i := range 5 {
				rc := fromCtx(c.path(i), cookie, flooder, "")
				h(rc)
				if st := rc.Response.StatusCode(); st == 429 || st >= 400 {
					t.Fatalf("request %d of the burst: %d %s", i+1, st, rc.Response.Body())
				}
			}
			served := f.counter(c.result, "result", "ok")
			if served != 5 {
				t.Fatalf("%s{result=ok} %v after the burst, want 5", c.result, served)
			}
			for i := 5; i < 25; i++ {
				rc := fromCtx(c.path(i), cookie, flooder, "")
				h(rc)
				if st := rc.Response.StatusCode(); st != 429 || string(rc.Response.Header.Peek("Retry-After")) != "1" {
					t.Fatalf("request %d over the burst: %d (Retry-After %q), want 429", i+1, st, rc.Response.Header.Peek("Retry-After"))
				}
			}
			if got := f.counter("rtbd_bidder_rate_limited_total", "endpoint", c.endpoint); got != 20 {
				t.Errorf("rtbd_bidder_rate_limited_total{endpoint=%s} %v, want 20", c.endpoint, got)
			}
			if got := f.counter(c.result, "result", "ok"); got != served {
				t.Errorf("%s{result=ok} moved to %v while limited", c.result, got)
			}
			if c.endpoint == "match" {
				var p user.Profile
				if uid, _, _ := f.users.GetMatched(context.Background(), "ssp1:x-24", "", nil, &p); uid != nil {
					t.Errorf("a limited /match stored its entry: %q", uid)
				}
				if uid, _, _ := f.users.GetMatched(context.Background(), "ssp1:x-4", "", nil, &p); string(uid) != userBulk {
					t.Errorf("an allowed /match stored %q, want %q", uid, userBulk)
				}
			}
			rc := fromCtx(c.path(99), cookie, other, "")
			h(rc)
			if st := rc.Response.StatusCode(); st == 429 || st >= 400 {
				t.Fatalf("another source during the flood: %d", st)
			}
			// The other endpoints keep their own buckets.
			for _, p := range []string{"/event?pg=1&pid=1&ev=view", "/usersync?redirect=" + redirect, "/match?x=ssp1&xuid=y"} {
				if p[:6] == c.path(0)[:6] {
					continue
				}
				rc := fromCtx(p, cookie, flooder, "")
				h(rc)
				if st := rc.Response.StatusCode(); st == 429 {
					t.Errorf("%s from the source limited on /%s: 429", p, c.endpoint)
				}
			}
		})
	}
}

// Many sources, each once: the table holds no more than its size, and a
// source flooding meanwhile stays limited.
func TestRateLimitTableBounded(t *testing.T) {
	// A stopped clock: the flooder's bucket gets no refill however long
	// the 50,000 requests take (under -race on a busy host, seconds).
	clock := clocktest.New(time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC))
	f := limitedFixture(t, func(o *Options) { o.Now = clock.Now })
	h := f.b.Handler()
	l := f.b.limits.lim[limitEvent]
	for range 10 {
		h(fromCtx("/event?pg=1&pid=1&ev=view", "", "192.0.2.1", ""))
	}
	for i := range uint32(50_000) {
		var a [4]byte
		binary.BigEndian.PutUint32(a[:], 0x0a000000|i)
		h(fromCtx("/event?pg=1&pid=1&ev=view", "", netip.AddrFrom4(a).String(), ""))
		if i%512 == 0 {
			h(fromCtx("/event?pg=1&pid=1&ev=view", "", "192.0.2.1", ""))
		}
	}
	if held := l.Held(); held > l.Sources() || l.Sources() != 1024 {
		t.Fatalf("table holds %d sources, size %d (want 1024)", held, l.Sources())
	}
	rc := fromCtx("/event?pg=1&pid=1&ev=view", "", "192.0.2.1", "")
	h(rc)
	if rc.Response.StatusCode() != 429 {
		t.Fatalf("the flooding source: %d after many others, want 429", rc.Response.StatusCode())
	}
}

// X-Forwarded-For names the source only behind a trusted proxy: its
// rightmost address that is not a trusted proxy. Elsewhere it is ignored,
// so a client cannot pick a fresh source per request.
func TestRateLimitForwardedFor(t *testing.T) {
	f := limitedFixture(t, func(o *Options) {
		o.RateLimits.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	})
	h := f.b.Handler()
	status := func(peer, xff string) int {
		rc := fromCtx("/event?pg=1&pid=1&ev=view", "", peer, xff)
		h(rc)
		return rc.Response.StatusCode()
	}
	// Behind the proxy: client 203.0.113.5 (spoofing an address to the
	// left, which is not trusted and not the rightmost untrusted one).
	for i := range 5 {
		if st := status("10.1.1.1", fmt.Sprintf("198.18.0.%d, 203.0.113.5, 10.2.2.2", i)); st == 429 {
			t.Fatalf("request %d behind the proxy: 429 within the burst", i+1)
		}
	}
	if st := status("10.1.1.1", "1.2.3.4, 203.0.113.5"); st != 429 {
		t.Fatalf("sixth request of 203.0.113.5 behind the proxy: %d, want 429", st)
	}
	if st := status("10.1.1.1", "203.0.113.6"); st == 429 {
		t.Fatal("another client behind the same proxy: 429")
	}
	// Not from a trusted proxy: the header is ignored.
	for i := range 5 {
		status("192.0.2.9", fmt.Sprintf("203.0.114.%d", i))
	}
	if st := status("192.0.2.9", "203.0.114.200"); st != 429 {
		t.Fatalf("an untrusted peer choosing X-Forwarded-For: %d, want 429", st)
	}
}
