package bidder

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prebid/openrtb/v20/openrtb2"

	"github.com/rtbd/rtbd/bidder/campaign"
	"github.com/rtbd/rtbd/bidder/explain"
	"github.com/rtbd/rtbd/bidder/internal/pixel"
	"github.com/rtbd/rtbd/bidder/token"
	"github.com/rtbd/rtbd/bidder/user"
	"github.com/rtbd/rtbd/catalog"
	"github.com/rtbd/rtbd/catalog/catalogpb"
	"github.com/rtbd/rtbd/catalog/catalogtest"
)

const nativeRequest = `{"ver":"1.2","assets":[{"id":1,"required":1,"title":{"len":25}},{"id":2,"required":1,"img":{"type":3,"wmin":100,"hmin":100}},{"id":3,"data":{"type":6}},{"id":4,"required":1,"data":{"type":1}}]}`

func nativeBid(imps ...map[string]any) []byte {
	req := map[string]any{
		"id":   "native-1",
		"imp":  imps,
		"site": map[string]any{"domain": "news.example.com", "page": "https://news.example.com/a"},
		"user": map[string]any{"buyeruid": userBulk},
		"tmax": 200,
	}
	b, _ := json.Marshal(req)
	return b
}

func TestNative(t *testing.T) {
	f := newFixture(t, nil)
	for _, wrapped := range []bool{false, true} {
		nr := nativeRequest
		if wrapped {
			nr = `{"native":` + nr + `}`
		}
		body := nativeBid(map[string]any{"id": "n1", "native": map[string]any{"request": nr, "ver": "1.2"}, "bidfloor": 0.1})
		r := f.bid(body)
		_, bids := checkResponse(t, f, body, r, userBulk)
		if len(bids) != 1 || bids[0].bid.MType != openrtb2.MarkupNative {
			t.Fatalf("bids %+v, want one native bid", bids)
		}
		adm := bids[0].bid.AdM
		var resp struct {
			Native *json.RawMessage `json:"native"`
			Ver    string           `json:"ver"`
		}
		if err := json.Unmarshal([]byte(adm), &resp); err != nil {
			t.Fatal(err)
		}
		if wrapped != (resp.Native != nil) {
			t.Errorf("wrapped request %v, response %s", wrapped, adm)
		}
		for _, want := range []string{`"id":1,"required":1,"title":{"text":"Product 1 of group 1"}`, `"url":"https://img.example.com/1/1.jpg"`, `"id":4,"required":1,"data":{"value":"Example Shop"}`, `"link":{"url":"https://bid.example.com/click?t=`} {
			if !strings.Contains(adm, want) {
				t.Errorf("native adm lacks %s:\n%s", want, adm)
			}
		}
		if len(bids[0].landing) != 1 || bids[0].landing[0] != "https://shop.example.com/1/item/1" {
			t.Errorf("native link lands on %v", bids[0].landing)
		}
	}
	// A required asset rtbd cannot fill: no bid (504); an unreadable
	// native request: nbr 2.
	f2 := newFixture(t, func(o *Options) { o.NBRBody = true })
	for _, tc := range []struct {
		req string
		nbr int
	}{
		{`{"assets":[{"id":1,"required":1,"video":{"mimes":["video/mp4"]}}]}`, 504},
		{`placeholder`, 2},
	} {
		r := f2.bid(nativeBid(map[string]any{"id": "n1", "native": map[string]any{"request": tc.req}}))
		var nb struct{ NBR int }
		if json.Unmarshal(r.body, &nb); nb.NBR != tc.nbr {
			t.Errorf("%s: %s, want nbr %d", tc.req, r.body, tc.nbr)
		}
	}
}

// TestEscapedCreative: the fixture's full product has a title with markup,
// quotes and &; the banner shows it as text.
func TestEscapedCreative(t *testing.T) {
	f := newFixture(t, nil)
	body := withUser(t, readFile(t, filepath.Join(specDir, "request-1-simple-banner.json")), userFull)
	r := f.bid(body)
	_, bids := checkResponse(t, f, body, r, userFull)
	adm := bids[0].bid.AdM
	full := catalogtest.FullProduct()
	if strings.Contains(adm, "<b>\"Navy") || strings.Contains(adm, "<b>&#34;Navy") || !strings.Contains(adm, "&lt;b&gt;&#34;Navy&#34;&lt;/b&gt; &amp; more") {
		t.Errorf("title not escaped in:\n%s", adm)
	}
	if !strings.Contains(adm, "Full &lt;Shop&gt; &amp; &#34;Co&#34;") {
		t.Errorf("advertiser not escaped")
	}
	if len(bids[0].images) != 1 || bids[0].images[0] != full.ImageUrl || bids[0].landing[0] != full.LandingUrl {
		t.Errorf("images %v landing %v", bids[0].images, bids[0].landing)
	}
	if !strings.Contains(adm, "<s>¥1,980</s>¥1,480") {
		t.Errorf("sale price not shown beside the struck list price")
	}
}

// TestClickLinks: by default a banner carries its click token once, in
// <base href>, and checkResponse follows every link resolved against it;
// with AbsoluteClicks every link is a full /click?t=TOKEN.PRODUCT URL.
// Either way each link reaches its product's landing page.
func TestClickLinks(t *testing.T) {
	body := withUser(t, readFile(t, filepath.Join(specDir, "request-1-simple-banner.json")), userBulk)
	for _, absolute := range []bool{false, true} {
		f := newFixture(t, func(o *Options) { o.AbsoluteClicks = absolute })
		r := f.bid(body)
		_, bids := checkResponse(t, f, body, r, userBulk)
		adm := bids[0].bid.AdM
		bases, queries := strings.Count(adm, "<base target=_blank href='"+f.b.opts.PublicURL+PathClickBase), strings.Count(adm, f.b.opts.PublicURL+PathClick+"?t=")
		if n := len(bids[0].landing); n < 2 {
			t.Fatalf("absolute %v: %d links followed, want several", absolute, n)
		}
		if absolute && (bases != 0 || queries != len(bids[0].landing)) || !absolute && (bases != 1 || queries != 0) {
			t.Errorf("absolute %v: %d <base> and %d /click?t= links for %d products:\n%s", absolute, bases, queries, len(bids[0].landing), adm)
		}
	}
	f := newFixture(t, nil)
	if r := f.do("GET", "/clicks/x/1", nil); r.status != 404 {
		t.Errorf("/clicks/x/1: status %d, want 404 (not the click path)", r.status)
	}
}

func TestEventPixel(t *testing.T) {
	f := newFixture(t, nil)
	r := f.do("GET", "/event?uid="+f.signedUID("new-user")+"&pg=1&pid=42&ev=view&cb=123", nil)
	if r.status != 200 || r.headers["Content-Type"] != "image/gif" || len(r.body) != len(pixel.GIF) {
		t.Fatalf("status %d type %q len %d", r.status, r.headers["Content-Type"], len(r.body))
	}
	if r.headers["Cache-Control"] != "no-store" {
		t.Errorf("Cache-Control %q", r.headers["Cache-Control"])
	}
	var p user.Profile
	found, err := f.users.Get(context.Background(), "new-user", &p)
	if err != nil || !found || len(p.ViewedIn(1)) != 1 || p.ViewedIn(1)[0] != 42 {
		t.Fatalf("view not recorded: %v %v %+v", found, err, p)
	}
	for _, q := range []string{"", "?uid=u&pg=1&pid=x&ev=view", "?uid=u&pg=0&pid=1&ev=view", "?uid=u&pg=1&pid=1&ev=click", "?pg=1&pid=1"} {
		if r := f.do("GET", "/event"+q, nil); r.status != 400 {
			t.Errorf("%q: status %d, want 400", q, r.status)
		}
	}
	if r := f.do("POST", "/event?uid=u&pg=1&pid=1&ev=view", nil); r.status != 405 {
		t.Errorf("POST: %d", r.status)
	}
	if ok, bad := f.counter("rtbd_bidder_events_total", "result", "ok"), f.counter("rtbd_bidder_events_total", "result", "invalid"); ok != 1 || bad != 5 {
		t.Errorf("events ok %v invalid %v", ok, bad)
	}
	// The new user's view makes it biddable.
	body := withUser(t, readFile(t, filepath.Join(specDir, "request-1-simple-banner.json")), "new-user")
	checkResponse(t, f, body, f.bid(body), "new-user")
}

// TestEventTimeout: a store slower than EventTimeout answers 503 in time.
func TestEventTimeout(t *testing.T) {
	f := newFixture(t, func(o *Options) {
		o.Users = slowViews{UserStore: o.Users, delay: 2 * time.Second}
		o.EventTimeout = 30 * time.Millisecond
	})
	start := time.Now()
	r := f.do("GET", "/event?uid="+f.signedUID("u1")+"&pg=1&pid=1&ev=view", nil)
	if r.status != 503 || time.Since(start) >= 2*time.Second {
		t.Errorf("status %d after %s, want 503 before the store's 2s", r.status, time.Since(start))
	}
}

// slowViews is a TEST WRAPPER delaying RecordView (honouring ctx).
type slowViews struct {
	UserStore
	delay time.Duration
}

func (s slowViews) RecordView(ctx context.Context, uid string, g, pid int64) error {
	select {
	case <-time.After(s.delay):
	case <-ctx.Done():
		return ctx.Err()
	}
	return s.UserStore.RecordView(ctx, uid, g, pid)
}

func TestClick(t *testing.T) {
	f := newFixture(t, nil)
	mk := func(tk token.Token) string {
		s, err := f.keys.Append(nil, &tk)
		if err != nil {
			t.Fatal(err)
		}
		return string(s)
	}
	now := time.Now()
	good := mk(token.Token{Kind: token.KindClick, Issued: now, Expires: now.Add(time.Hour), Campaign: "c", URL: "https://shop.example.com/x?a=1&b=2"})
	other, _ := token.NewKeys([]byte("another-key-0123456789"))
	forgedB, _ := other.Append(nil, &token.Token{Kind: token.KindClick, Issued: now, Expires: now.Add(time.Hour), URL: "https://evil.example.com/"})
	expired := mk(token.Token{Kind: token.KindClick, Issued: now.Add(-2 * time.Hour), Expires: now.Add(-time.Hour), URL: "https://shop.example.com/x"})
	win := mk(token.Token{Kind: token.KindWin, Issued: now, Expires: now.Add(time.Hour), URL: "https://shop.example.com/x"})
	jsURL := mk(token.Token{Kind: token.KindClick, Issued: now, Expires: now.Add(time.Hour), URL: "javascript:alert(1)"})
	tampered := []byte(good)
	tampered[len(tampered)/2] ^= 1
	if tampered[len(tampered)/2] == '-' || tampered[len(tampered)/2] == '_' {
		tampered[len(tampered)/2] = 'A'
	}
	for _, tc := range []struct {
		name, query string
		status      int
		location    string
	}{
		{"good", "t=" + good, 302, "https://shop.example.com/x?a=1&b=2"},
		{"missing", "", 400, ""},
		{"unsigned url param", "url=https://evil.example.com/", 400, ""},
		{"forged", "t=" + string(forgedB), 400, ""},
		{"tampered", "t=" + string(tampered), 400, ""},
		{"expired", "t=" + expired, 302, "https://shop.example.com/x"}, // followed, counted expired
		{"win token", "t=" + win, 400, ""},
		{"javascript url", "t=" + jsURL, 400, ""},
		{"garbage", "t=" + url.QueryEscape("%%%<script>"), 400, ""},
	} {
		r := f.do("GET", "/click?"+tc.query, nil)
		if r.status != tc.status || r.headers["Location"] != tc.location {
			t.Errorf("%s: status %d Location %q, want %d %q", tc.name, r.status, r.headers["Location"], tc.status, tc.location)
		}
	}
	if got := f.counter("rtbd_bidder_clicks_total", "result", "invalid"); got != 7 {
		t.Errorf("clicks{invalid} = %v, want 7", got)
	}
	if got := f.counter("rtbd_bidder_clicks_total", "result", "expired"); got != 1 {
		t.Errorf("clicks{expired} = %v, want 1", got)
	}
}

func TestNoticesWithoutHandler(t *testing.T) {
	f := newFixture(t, nil)
	if r := f.do("GET", "/win?t=x&p=1.2", nil); r.status != 204 {
		t.Errorf("win: %d", r.status)
	}
	if got := f.counter("rtbd_bidder_notices_unhandled_total"); got != 1 {
		t.Errorf("notices_unhandled = %v", got)
	}
}

// TestDebugExplain: the admin endpoint explains, per campaign, why it bid
// or not, without counting the request in the bid metrics.
func TestDebugExplain(t *testing.T) {
	f := newFixture(t, nil)
	srv := httptest.NewServer(f.b.DebugHandler())
	defer srv.Close()
	body := withUser(t, readFile(t, filepath.Join(specDir, "request-5-pmp-with-direct-deal.json")), userBulk)
	resp, err := http.Post(srv.URL, "application/json", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var ex explain.Explain
	if err := json.NewDecoder(resp.Body).Decode(&ex); err != nil {
		t.Fatal(err)
	}
	if ex.Decision != "bid" || !ex.User.Found || len(ex.Imps) != 1 || ex.Campaigns != 4 || len(ex.Response) == 0 {
		t.Fatalf("explain %+v", ex)
	}
	by := map[string]*explain.CampaignExplain{}
	for _, c := range ex.Imps[0].Campaigns {
		by[c.ID] = c
	}
	if c := by["deal-agency1"]; c == nil || c.Decision != "bid" || c.DealID != "AB-Agency1-0001" {
		t.Errorf("deal campaign: %+v", c)
	}
	if c := by["banner-medium"]; c == nil || c.Decision != "rejected" || !strings.Contains(c.Reason, "private auction") {
		t.Errorf("open-auction campaign on a private auction: %+v", c)
	}
	if c := by["full-jpy"]; c == nil || c.Decision != "rejected" {
		t.Errorf("full-jpy: %+v", c)
	}
	if got := f.counter("rtbd_bidder_requests_total"); got != 0 {
		t.Errorf("the debug run counted as %v requests", got)
	}
	// A no-bid explained.
	resp2, err := http.Post(srv.URL, "application/json", strings.NewReader(`{"id":"x","imp":[{"id":"1","banner":{"w":300,"h":250}}],"user":{"buyeruid":"nobody"}}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp2.Body.Close()
	var ex2 explain.Explain
	json.NewDecoder(resp2.Body).Decode(&ex2)
	if ex2.Decision != "no-bid" || ex2.NBR != 8 || ex2.User.Problem != "unknown user" {
		t.Errorf("unknown user explained as %+v", ex2)
	}
	if r, _ := http.Get(srv.URL); r != nil && r.StatusCode != 405 {
		t.Errorf("GET: %d", r.StatusCode)
	}
}

// failingProducts is a TEST WRAPPER: a ProductStore whose every lookup
// fails, as a catalog outage would.
type failingProducts struct{}

func (failingProducts) GetProductMasters(context.Context, *catalogpb.ProductMastersRequest) (*catalogpb.ProductMastersResponse, error) {
	return nil, catalog.ErrUnavailable
}

// TestClickProducts: clicks with the bid's click token (t=TOKEN.PRODUCT):
// the landing URL comes from the catalog; a product the token does not
// list, a missing or bad product part, a product no longer served and a
// catalog failure each get their answer, never an open redirect.
func TestClickProducts(t *testing.T) {
	set := loadCampaigns(t, "campaigns.yaml")
	base, ok := set.Get("banner-medium")
	if !ok {
		t.Fatal("no campaign banner-medium")
	}
	withBase := *base
	withBase.ID = "with-base"
	withBase.Creative.ClickBase = "https://shop.example.com/lp"
	all, err := campaign.NewSet(append(set.All(), &withBase))
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, func(o *Options) { o.Campaigns = staticCampaigns{all} })
	down := newFixture(t, func(o *Options) { o.Campaigns = staticCampaigns{all}; o.Products = failingProducts{} })
	now := time.Now()
	mk := func(camp string, products ...int64) string {
		s, err := f.keys.Append(nil, &token.Token{Kind: token.KindClick, Issued: now, Expires: now.Add(time.Hour),
			Campaign: camp, Group: catalogtest.BulkGroup, Products: products})
		if err != nil {
			t.Fatal(err)
		}
		return string(s)
	}
	plain := mk("banner-medium", 1, 10, 999)
	based := mk("with-base", 1, 10, 999)
	gone := mk("removed-campaign", 1, 10)
	v1, _ := f.keys.Append(nil, &token.Token{Kind: token.KindClick, Issued: now, Expires: now.Add(time.Hour), URL: "https://shop.example.com/x"})
	item1 := fmt.Sprintf("https://shop.example.com/%d/item/1", catalogtest.BulkGroup)
	for _, tc := range []struct {
		name     string
		f        *fixture
		uri      string
		status   int
		location string
		result   string
	}{
		{"listed product", f, "/click?t=" + plain + ".1", 302, item1, "ok"},
		{"campaign since removed", f, "/click?t=" + gone + ".1", 302, item1, "ok"},
		{"product not in the token", f, "/click?t=" + plain + ".2", 400, "", "invalid"},
		{"no product", f, "/click?t=" + plain, 400, "", "invalid"},
		{"empty product", f, "/click?t=" + plain + ".", 400, "", "invalid"},
		{"bad product", f, "/click?t=" + plain + ".x1", 400, "", "invalid"},
		{"negative product", f, "/click?t=" + plain + ".-1", 400, "", "invalid"},
		{"v1 token with a product", f, "/click?t=" + string(v1) + ".1", 400, "", "invalid"},
		{"out of stock, no click base", f, "/click?t=" + plain + ".10", 404, "", "fallback"},
		{"out of stock, click base", f, "/click?t=" + based + ".10", 302, "https://shop.example.com/lp", "fallback"},
		{"not in the catalog, click base", f, "/click?t=" + based + ".999", 302, "https://shop.example.com/lp", "fallback"},
		{"catalog down, click base", down, "/click?t=" + based + ".1", 302, "https://shop.example.com/lp", "error"},
		{"catalog down, no click base", down, "/click?t=" + plain + ".1", 503, "", "error"},
		// The path form, a banner's link resolved against its <base href>.
		{"path form", f, "/click/" + plain + "/1", 302, item1, "ok"},
		{"path form with a query", f, "/click/" + plain + "/1?utm=x", 302, item1, "ok"},
		{"path form, product not in the token", f, "/click/" + plain + "/2", 400, "", "invalid"},
		{"path form, no product", f, "/click/" + plain + "/", 400, "", "invalid"},
		{"path form, no token", f, "/click//1", 400, "", "invalid"},
		{"path form, extra segment", f, "/click/" + plain + "/1/2", 400, "", "invalid"},
		{"path form, query form inside", f, "/click/" + plain + ".1", 400, "", "invalid"},
		{"path form, v1 token", f, "/click/" + string(v1) + "/1", 400, "", "invalid"},
		{"path form, not in the catalog, click base", f, "/click/" + based + "/999", 302, "https://shop.example.com/lp", "fallback"},
		{"path form, catalog down, no click base", down, "/click/" + plain + "/1", 503, "", "error"},
	} {
		before := tc.f.counter("rtbd_bidder_clicks_total", "result", tc.result)
		r := tc.f.do("GET", tc.uri, nil)
		if r.status != tc.status || r.headers["Location"] != tc.location {
			t.Errorf("%s: status %d Location %q, want %d %q", tc.name, r.status, r.headers["Location"], tc.status, tc.location)
		}
		if got := tc.f.counter("rtbd_bidder_clicks_total", "result", tc.result); got != before+1 {
			t.Errorf("%s: clicks{result=%s} %v -> %v, want +1", tc.name, tc.result, before, got)
		}
	}
}

// TestDemoImages: with Options.DemoImages the bidder serves the demo
// catalog's generated pictures; without it, or for a path that names no
// product, 404.
func TestDemoImages(t *testing.T) {
	off := newFixture(t, nil)
	if r := off.do("GET", "/demo/img/1/42.svg", nil); r.status != 404 {
		t.Errorf("off: status %d", r.status)
	}
	f := newFixture(t, func(o *Options) { o.DemoImages = true })
	r := f.do("GET", "/demo/img/1/42.svg", nil)
	if r.status != 200 || r.headers["Content-Type"] != "image/svg+xml" || !bytes.HasPrefix(r.body, []byte("<svg ")) ||
		!bytes.Contains(r.body, []byte(">#42<")) {
		t.Fatalf("status %d type %q body %.80s", r.status, r.headers["Content-Type"], r.body)
	}
	for _, p := range []string{"/demo/img/1/42.jpg", "/demo/img/x/42.svg", "/demo/img/"} {
		if r := f.do("GET", p, nil); r.status != 404 {
			t.Errorf("%s: status %d", p, r.status)
		}
	}
	if r := f.do("POST", "/demo/img/1/42.svg", nil); r.status != 405 {
		t.Errorf("POST: status %d", r.status)
	}
}
