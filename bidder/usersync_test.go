package bidder

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/rtbd/rtbd/bidder/exchange"
	"github.com/rtbd/rtbd/bidder/privacy/privacytest"
	"github.com/rtbd/rtbd/bidder/user"
	"github.com/rtbd/rtbd/bidder/user/pebblestore"
	"github.com/rtbd/rtbd/bidder/usersync"
)

// getCtx returns a GET request for path (with its query) and the cookie
// header cookie ("" none).
func getCtx(path, cookie string) *fasthttp.RequestCtx {
	var rc fasthttp.RequestCtx
	rc.Request.Header.SetMethod(fasthttp.MethodGet)
	rc.Request.SetRequestURI(path)
	if cookie != "" {
		rc.Request.Header.Set(fasthttp.HeaderCookie, cookie)
	}
	return &rc
}

// setCookie returns the value of the uid cookie the response sets, "" none.
func setCookie(rc *fasthttp.RequestCtx, name string) (value string, header string) {
	c := fasthttp.AcquireCookie()
	defer fasthttp.ReleaseCookie(c)
	c.SetKey(name)
	if !rc.Response.Header.Cookie(c) {
		return "", ""
	}
	return string(c.Value()), string(c.Cookie())
}

// TestEventUIDRules is the /event uid rule: a uid from the query only when
// signed (or trusted), else the cookie's; no cookie: one is set and
// nothing is written. 10,000 events with random unsigned uids and no
// cookie create no profile.
func TestEventUIDRules(t *testing.T) {
	f := newFixture(t, nil)
	h := f.b.Handler()
	before, _, err := f.users.Count()
	if err != nil {
		t.Fatal(err)
	}
	const hits = 10_000
	rnd := rand.New(rand.NewPCG(1, 2))
	minted := map[string]bool{}
	for i := range hits {
		rc := getCtx(fmt.Sprintf("/event?uid=fake-%x&pg=1&pid=%d&ev=view", rnd.Uint64(), 1+i%1000), "")
		h(rc)
		if rc.Response.StatusCode() != 200 {
			t.Fatalf("hit %d: status %d", i, rc.Response.StatusCode())
		}
		if i < 100 {
			v, hdr := setCookie(rc, "rtbd_uid")
			if len(v) != 22 || minted[v] {
				t.Fatalf("hit %d: cookie %q (want a new random 22-character uid)", i, hdr)
			}
			minted[v] = true
			for _, attr := range []string{"SameSite=None", "secure", "HttpOnly", "max-age=31536000", "path=/"} {
				if !strings.Contains(strings.ToLower(hdr), strings.ToLower(attr)) {
					t.Errorf("Set-Cookie %q lacks %s", hdr, attr)
				}
			}
		}
	}
	after, _, err := f.users.Count()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d events with random unsigned uids and no cookie: profiles %d -> %d", hits, before, after)
	if after != before {
		t.Fatalf("%d events with unsigned uids and no cookie created %d profiles", hits, after-before)
	}
	if n := f.counter("rtbd_bidder_events_unrecorded_total", "reason", "new_uid"); n != hits {
		t.Errorf("unrecorded new_uid = %v, want %d", n, hits)
	}
	if n := f.counter("rtbd_bidder_query_uid_refused_total"); n != hits {
		t.Errorf("query uids refused = %v, want %d", n, hits)
	}

	viewed := func(uid string) []int64 {
		t.Helper()
		var p user.Profile
		if _, err := f.users.Get(context.Background(), uid, &p); err != nil {
			t.Fatal(err)
		}
		return p.ViewedIn(7)
	}
	event := func(query, cookie string) *fasthttp.RequestCtx {
		t.Helper()
		rc := getCtx("/event?pg=7&ev=view&"+query, cookie)
		h(rc)
		if rc.Response.StatusCode() != 200 {
			t.Fatalf("%s: status %d", query, rc.Response.StatusCode())
		}
		return rc
	}
	// The cookie's uid is written (and an unsigned uid= ignored).
	event("pid=1", "rtbd_uid=cookie-user")
	event("pid=2&uid=other", "rtbd_uid=cookie-user")
	if got := viewed("cookie-user"); len(got) != 2 || len(viewed("other")) != 0 {
		t.Errorf("cookie user viewed %v, other %v", got, viewed("other"))
	}
	// A signed uid is written; a tampered or expired one is not.
	event("pid=3&uid="+f.signedUID("signed-user"), "")
	s := []byte(f.signedUID("signed-user"))
	s[5] ^= 1
	event("pid=4&uid="+string(s), "")
	old, _ := f.keys.AppendUID(nil, "signed-user", time.Now().Add(-time.Hour))
	event("pid=5&uid="+string(old), "")
	if got := viewed("signed-user"); len(got) != 1 || got[0] != 3 {
		t.Errorf("signed user viewed %v, want [3]", got)
	}
	// No personalisation: nothing written, no cookie set.
	rc := event("pid=6&gdpr=1", "rtbd_uid=cookie-user")
	if v, _ := setCookie(rc, "rtbd_uid"); v != "" || len(viewed("cookie-user")) != 2 {
		t.Errorf("gdpr=1 without consent: cookie %q, viewed %v", v, viewed("cookie-user"))
	}
	// A cookie that is no uid rtbd sets is treated as absent.
	rc = event("pid=7", "rtbd_uid=bad%20value")
	if v, _ := setCookie(rc, "rtbd_uid"); len(v) != 22 {
		t.Errorf("a malformed cookie: new cookie %q", v)
	}
}

// TestEventTrustQueryUID: with UserID.TrustQueryUID an unsigned uid= is
// written.
func TestEventTrustQueryUID(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.UserID.TrustQueryUID = true })
	if r := f.do("GET", "/event?uid=trusted&pg=1&pid=42&ev=view", nil); r.status != 200 {
		t.Fatalf("status %d", r.status)
	}
	var p user.Profile
	if found, err := f.users.Get(context.Background(), "trusted", &p); !found || err != nil {
		t.Fatalf("trusted query uid not written: %v %v", found, err)
	}
}

// TestEventCapsAndTTL: profiles written by /event stay within the caps
// and expire with a short user.ttl.
func TestEventCapsAndTTL(t *testing.T) {
	users, err := pebblestore.Open(filepath.Join(t.TempDir(), "users"), pebblestore.Options{MaxGroups: 3, MaxViewed: 4, TTL: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { users.Close() })
	f := newFixture(t, func(o *Options) { o.Users = users })
	h := f.b.Handler()
	for g := 1; g <= 6; g++ {
		for pid := 1; pid <= 10; pid++ {
			rc := getCtx(fmt.Sprintf("/event?pg=%d&pid=%d&ev=view", g, pid), "rtbd_uid=capped")
			h(rc)
			if rc.Response.StatusCode() != 200 {
				t.Fatalf("status %d", rc.Response.StatusCode())
			}
		}
	}
	var p user.Profile
	if found, err := users.Get(context.Background(), "capped", &p); !found || err != nil {
		t.Fatal(found, err)
	}
	if len(p.Viewed) != 3 || p.Viewed[0].Group != 6 {
		t.Fatalf("groups %+v, want the 3 newest (6, 5, 4)", p.Viewed)
	}
	for _, g := range p.Viewed {
		if len(g.IDs) != 4 || g.IDs[0] != 10 {
			t.Errorf("group %d: %v, want the 4 newest products", g.Group, g.IDs)
		}
	}
	time.Sleep(2500 * time.Millisecond)
	if found, err := users.Get(context.Background(), "capped", &p); found || err != nil {
		t.Fatalf("2.5 TTLs after its last view the profile is still there: %v %v", found, err)
	}
}

const pbsSetUID = "https://pbs.example/setuid?bidder=rtbd&gdpr=%s&gdpr_consent=%s&uid=$UID"

// TestUserSyncPrebidServer is Prebid Server's redirect flow: PBS sends the
// browser to /usersync with its /setuid URL (its GDPR macros filled in);
// rtbd answers 302 there with $UID replaced by its uid and sets its
// cookie; without consent the uid is empty and no cookie is set.
func TestUserSyncPrebidServer(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.UserID.SyncRedirectHosts = []string{"pbs.example"} })
	h := f.b.Handler()
	sync := func(gdpr, consent, cookie string) (*fasthttp.RequestCtx, *url.URL) {
		t.Helper()
		redirect := fmt.Sprintf(pbsSetUID, gdpr, consent)
		rc := getCtx("/usersync?redirect="+url.QueryEscape(redirect)+"&gdpr="+gdpr+"&gdpr_consent="+consent+"&gpp=&gpp_sid=&us_privacy=", cookie)
		h(rc)
		if rc.Response.StatusCode() != 302 {
			t.Fatalf("gdpr=%s consent=%q: status %d", gdpr, consent, rc.Response.StatusCode())
		}
		loc, err := url.Parse(string(rc.Response.Header.Peek("Location")))
		if err != nil || loc.Host != "pbs.example" || loc.Path != "/setuid" || loc.Query().Get("bidder") != "rtbd" {
			t.Fatalf("Location %q: %v", rc.Response.Header.Peek("Location"), err)
		}
		return rc, loc
	}
	// No GDPR: a new uid, set as the cookie and sent to PBS.
	rc, loc := sync("0", "", "")
	uid, _ := setCookie(rc, "rtbd_uid")
	if len(uid) != 22 || loc.Query().Get("uid") != uid {
		t.Fatalf("cookie %q, PBS got uid %q", uid, loc.Query().Get("uid"))
	}
	// The browser comes back with the cookie: the same uid.
	rc, loc = sync("0", "", "rtbd_uid="+uid)
	if again, _ := setCookie(rc, "rtbd_uid"); again != uid || loc.Query().Get("uid") != uid {
		t.Errorf("second sync: cookie %q, uid %q, want %q", again, loc.Query().Get("uid"), uid)
	}
	// GDPR with consent for purposes 1, 3 and 4.
	rc, loc = sync("1", consentAll, "rtbd_uid="+uid)
	if v, _ := setCookie(rc, "rtbd_uid"); v != uid || loc.Query().Get("uid") != uid || loc.Query().Get("gdpr_consent") != consentAll {
		t.Errorf("gdpr with consent: cookie %q, location %s", v, loc)
	}
	// GDPR without consent: empty uid, no cookie.
	for _, consent := range []string{"", consentNone} {
		rc, loc = sync("1", consent, "rtbd_uid="+uid)
		if v, hdr := setCookie(rc, "rtbd_uid"); v != "" || hdr != "" || !loc.Query().Has("uid") || loc.Query().Get("uid") != "" {
			t.Errorf("gdpr without consent (%q): cookie %q, location %s, want uid= empty and no cookie", consent, hdr, loc)
		}
	}
	if ok, priv := f.counter("rtbd_bidder_usersyncs_total", "result", "ok"), f.counter("rtbd_bidder_usersyncs_total", "result", "privacy"); ok != 3 || priv != 2 {
		t.Errorf("usersyncs ok %v privacy %v, want 3 and 2", ok, priv)
	}
	// An exchange's own macro.
	f2 := newFixture(t, func(o *Options) {
		o.UserID.SyncRedirectHosts = []string{"sync.example"}
		o.Exchanges = []exchange.Exchange{{Name: "ssp", UIDMacro: "[UID]"}}
	})
	rc = getCtx("/usersync?x=ssp&redirect="+url.QueryEscape("https://sync.example/s?id=[UID]&u=$UID"), "rtbd_uid=abc")
	f2.b.Handler()(rc)
	if got := string(rc.Response.Header.Peek("Location")); got != "https://sync.example/s?id=abc&u=$UID" {
		t.Errorf("exchange macro: Location %q", got)
	}
}

// TestUserSyncRedirectRefused: targets outside the allowlist are 400.
func TestUserSyncRedirectRefused(t *testing.T) {
	f := newFixture(t, func(o *Options) {
		o.UserID.SyncRedirectHosts = []string{"pbs.example", "http://plain.example:8000"}
	})
	h := f.b.Handler()
	for _, target := range []string{
		"", "//evil.example/setuid", `/\evil.example`, `\\evil.example`, "/setuid?uid=$UID", "setuid",
		"https://user@evil.example/", "https://user@pbs.example/", "https://pbs.example@evil.example/",
		"https://evil.example/", "https://pbs.example.evil.example/", "https://evil.example/?pbs.example",
		"https://pbs.example:444/", "http://pbs.example/", "javascript:alert(1)", "JavaScript://pbs.example/%0aalert(1)",
		"data:text/html,hi", "ftp://pbs.example/", "https://pbs%2eexample/", "https://evil%2Eexample/",
		"https://pbs.example%2f@evil.example/", "https://%70bs.example/", "https:/\\evil.example", "https:\\\\evil.example",
		"https://pbs.example\\@evil.example/", "https://pbs.example/\x00", "https://pbs.example/\n", "https://pbs.example/ x",
		"https://pbs.example\t/", " https://pbs.example/", "https://[::1]/", "https://pbs.example:/",
		"http://plain.example/", "https://ＰＢＳ.example/",
	} {
		for _, path := range []string{"/usersync?redirect=", "/match?x=default&xuid=x1&redirect="} {
			if target == "" && strings.HasPrefix(path, PathMatch) {
				continue // /match without a redirect answers the pixel
			}
			rc := getCtx(path+url.QueryEscape(target), "")
			h(rc)
			if rc.Response.StatusCode() != 400 {
				t.Errorf("%s%q: status %d (Location %q), want 400", path, target, rc.Response.StatusCode(), rc.Response.Header.Peek("Location"))
			}
			if body := string(rc.Response.Body()); body != usersync.RefusedRedirect {
				t.Errorf("%s%q: 400 body %q, want the redirect rule", path, target, body)
			}
			if _, hdr := setCookie(rc, "rtbd_uid"); hdr != "" {
				t.Errorf("%s%q: a refused redirect set a cookie", path, target)
			}
		}
	}
	// Double-encoded: decoded once by the query, still encoded in the URL.
	rc := getCtx("/usersync?redirect=https%253A%252F%252Fevil.example%252F", "")
	h(rc)
	if rc.Response.StatusCode() != 400 {
		t.Errorf("double-encoded target: %d", rc.Response.StatusCode())
	}
	for _, ok := range []string{"https://pbs.example/setuid?uid=$UID", "https://PBS.example/x", "http://plain.example:8000/s?u=$UID", "https://plain.example:8000/"} {
		rc := getCtx("/usersync?redirect="+url.QueryEscape(ok), "")
		h(rc)
		if rc.Response.StatusCode() != 302 {
			t.Errorf("%q: status %d, want 302", ok, rc.Response.StatusCode())
		}
	}
	for path, want := range map[string]string{
		"/usersync?x=nope&redirect=" + url.QueryEscape("https://pbs.example/"): usersync.RefusedExchange,
		"/match?x=nope&xuid=x1":       usersync.RefusedExchange,
		"/match?xuid=x1":              usersync.RefusedExchange,
		"/match?x=default&xuid=":      usersync.RefusedXUID,
		"/match?x=default&xuid=a%01b": usersync.RefusedXUID,
	} {
		rc = getCtx(path, "")
		h(rc)
		if code, body := rc.Response.StatusCode(), string(rc.Response.Body()); code != 400 || body != want {
			t.Errorf("%s: %d %q, want 400 %q", path, code, body, want)
		}
	}
}

// TestMatchThenBid: /match stores the exchange's id -> rtbd's uid; a bid
// request of that exchange with only user.id then bids for rtbd's user.
func TestMatchThenBid(t *testing.T) {
	f := newFixture(t, func(o *Options) {
		o.Exchanges = []exchange.Exchange{{Name: "ssp1"}, {Name: "ssp2"}}
		o.UserID.SyncRedirectHosts = []string{"ssp1.example"}
	})
	h := f.b.Handler()
	rc := getCtx("/match?x=ssp1&xuid=ssp-user-9", "rtbd_uid="+userBulk)
	h(rc)
	if rc.Response.StatusCode() != 200 || string(rc.Response.Header.ContentType()) != "image/gif" {
		t.Fatalf("match: %d %q", rc.Response.StatusCode(), rc.Response.Header.ContentType())
	}
	rc = getCtx("/match?x=ssp1&xuid=ssp-user-10&redirect="+url.QueryEscape("https://ssp1.example/ok"), "")
	h(rc)
	minted, _ := setCookie(rc, "rtbd_uid")
	if rc.Response.StatusCode() != 302 || string(rc.Response.Header.Peek("Location")) != "https://ssp1.example/ok" || minted == "" {
		t.Fatalf("match with redirect: %d %q cookie %q", rc.Response.StatusCode(), rc.Response.Header.Peek("Location"), minted)
	}
	var p user.Profile
	if uid, _, err := f.users.GetMatched(context.Background(), "ssp1:ssp-user-10", "", nil, &p); string(uid) != minted || err != nil {
		t.Errorf("match of a new browser: %q %v, want the minted %q", uid, err, minted)
	}
	for _, q := range []string{"/match?x=nope&xuid=a", "/match?xuid=a", "/match?x=ssp1", "/match?x=ssp1&xuid=" + strings.Repeat("a", 200)} {
		rc := getCtx(q, "rtbd_uid=u")
		h(rc)
		if rc.Response.StatusCode() != 400 {
			t.Errorf("%s: %d, want 400", q, rc.Response.StatusCode())
		}
	}
	// No personalisation: nothing stored.
	h(getCtx("/match?x=ssp1&xuid=private&gdpr=1", "rtbd_uid="+userBulk))
	if uid, _, _ := f.users.GetMatched(context.Background(), "ssp1:private", "", nil, &p); uid != nil {
		t.Errorf("a match without consent was stored: %q", uid)
	}

	body := withUserID(t, readFile(t, filepath.Join(specDir, "request-1-simple-banner.json")), "ssp-user-9")
	r := f.do(fasthttp.MethodPost, PathBid+"/ssp1", body, "Content-Type", "application/json")
	checkResponse(t, f, body, r, userBulk)
	// Another exchange's request with the same id is not matched.
	if r := f.do(fasthttp.MethodPost, PathBid+"/ssp2", body, "Content-Type", "application/json"); r.status != 204 {
		t.Errorf("ssp2 with ssp1's user id: status %d, want a no-bid", r.status)
	}
	if r := f.do(fasthttp.MethodPost, PathBid+"/nope", body, "Content-Type", "application/json"); r.status != 404 {
		t.Errorf("unknown exchange: status %d, want 404", r.status)
	}
	if r := f.do(fasthttp.MethodPost, PathBid+"/", body, "Content-Type", "application/json"); r.status != 404 {
		t.Errorf("empty exchange name: status %d, want 404", r.status)
	}
	if n := f.counter("rtbd_bidder_requests_total", "exchange", "ssp1"); n != 1 {
		t.Errorf("requests{exchange=ssp1} = %v", n)
	}
	if n := f.counter("rtbd_bidder_bids_total", "exchange", "ssp1"); n != 1 {
		t.Errorf("bids{exchange=ssp1} = %v", n)
	}
	if n := f.counter("rtbd_bidder_requests_total", "exchange", "ssp2"); n != 1 {
		t.Errorf("requests{exchange=ssp2} = %v", n)
	}
	if n := f.counter("rtbd_bidder_requests_total", "exchange", "default"); n != 0 {
		t.Errorf("requests{exchange=default} = %v", n)
	}
}

// TCF v2 strings: consent for purposes 1-4 and vendor 42; consent for
// purpose 1 only (no personalised ads).
var (
	consentAll  = privacytest.TCF2([]int{1, 2, 3, 4}, []int{42}, 42, 0, 0)
	consentNone = privacytest.TCF2([]int{1}, []int{42}, 42, 0, 0)
)
