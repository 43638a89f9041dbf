package bidder

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/prebid/openrtb/v20/openrtb2"
	xhtml "golang.org/x/net/html"
	"google.golang.org/protobuf/proto"

	"github.com/rtbd/rtbd/bidder/user"
	"github.com/rtbd/rtbd/catalog/catalogpb"
	"github.com/rtbd/rtbd/catalog/catalogtest"
	"github.com/rtbd/rtbd/rtb"
)

// Bases of the secure-imp tests: an http public_url beside an https
// secure_public_url on another host, so a URL from the wrong base shows.
const (
	plainBase  = "http://bid.example.com"
	secureBase = "https://secure-bid.example.com"
)

// plainURL matches an http URL, also with JSON-escaped slashes.
var plainURL = regexp.MustCompile(`(?i)http:(//|\\/\\/)[^\s"'<>)]*`)

// xmlNames matches the attributes of a VAST document that hold XML names,
// not URLs anything fetches: namespace declarations and schema locations.
var xmlNames = regexp.MustCompile(`\s(xmlns(:[\w.-]+)?|[\w.-]+:(schemaLocation|noNamespaceSchemaLocation))\s*=\s*("[^"]*"|'[^']*')`)

// plainHTTP returns the plain http URLs in what bid makes an exchange, a
// browser or a player load or call: nurl, burl, and the adm, scanned as
// it is and as decoded (HTML attributes and text with entities decoded,
// every JSON string of a native response, every VAST text and attribute
// but XML names).
func plainHTTP(t *testing.T, bid *openrtb2.Bid) []string {
	t.Helper()
	var out []string
	scan := func(where, s string) {
		for _, u := range plainURL.FindAllString(s, -1) {
			out = append(out, where+": "+u)
		}
	}
	scan("nurl", bid.NURL)
	scan("burl", bid.BURL)
	switch bid.MType {
	case openrtb2.MarkupBanner:
		scan("adm", bid.AdM)
		z := xhtml.NewTokenizer(strings.NewReader(bid.AdM))
		for tt := z.Next(); tt != xhtml.ErrorToken; tt = z.Next() {
			tok := z.Token()
			scan("adm text", tok.Data)
			for _, a := range tok.Attr {
				scan("adm "+tok.Data+" "+a.Key, a.Val)
			}
		}
	case openrtb2.MarkupNative:
		scan("adm", bid.AdM)
		var v any
		if err := json.Unmarshal([]byte(bid.AdM), &v); err != nil {
			t.Errorf("native adm is not JSON: %v", err)
		}
		var walk func(any)
		walk = func(v any) {
			switch v := v.(type) {
			case string:
				scan("adm string", v)
			case []any:
				for _, e := range v {
					walk(e)
				}
			case map[string]any:
				for _, e := range v {
					walk(e)
				}
			}
		}
		walk(v)
	case openrtb2.MarkupVideo:
		scan("adm", xmlNames.ReplaceAllString(bid.AdM, ""))
		d := xml.NewDecoder(strings.NewReader(bid.AdM))
		for {
			tok, err := d.Token()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Errorf("VAST adm is not XML: %v", err)
				break
			}
			switch tk := tok.(type) {
			case xml.CharData:
				scan("adm text", string(tk))
			case xml.StartElement:
				for _, a := range tk.Attr {
					if a.Name.Space == "xmlns" || a.Name.Local == "xmlns" || strings.HasSuffix(a.Name.Local, "chemaLocation") {
						continue
					}
					scan("adm "+tk.Name.Local+" "+a.Name.Local, a.Value)
				}
			}
		}
	default:
		scan("adm", bid.AdM)
	}
	return out
}

// plainImages is a ProductStore over the fixture catalog in which every
// product whose id is a multiple of 3 has a plain http image, and every
// multiple of 4 a plain http landing page. The changed products are
// copies made once, so it hands out the same pointers every time, as the
// local index's hot cache does (the banner cell cache relies on it).
type plainImages struct {
	ProductStore
	alt map[[2]int64]*catalogpb.Product // {group, id}
}

func newPlainImages(inner ProductStore) *plainImages {
	s := &plainImages{ProductStore: inner, alt: map[[2]int64]*catalogpb.Product{}}
	for _, p := range catalogtest.Products() {
		img, land := p.ProductId%3 == 0, p.ProductId%4 == 0
		if !img && !land {
			continue
		}
		q := proto.Clone(p).(*catalogpb.Product)
		if img {
			q.ImageUrl = "http://" + strings.TrimPrefix(p.ImageUrl, "https://")
		}
		if land {
			q.LandingUrl = "http://" + strings.TrimPrefix(p.LandingUrl, "https://")
		}
		s.alt[[2]int64{p.ProductGroupId, p.ProductId}] = q
	}
	return s
}

func (s *plainImages) GetProductMasters(ctx context.Context, req *catalogpb.ProductMastersRequest) (*catalogpb.ProductMastersResponse, error) {
	resp, err := s.ProductStore.GetProductMasters(ctx, req)
	if resp != nil {
		for _, list := range [2][]*catalogpb.Product{resp.Product1S, resp.Product2S} {
			for i, p := range list {
				if q := s.alt[[2]int64{p.ProductGroupId, p.ProductId}]; q != nil {
					list[i] = q
				}
			}
		}
	}
	return resp, err
}

// withSecure returns body with imp.secure set to v on every imp (and the
// buyeruid set to uid).
func withSecure(t testing.TB, body []byte, uid string, v int) []byte {
	t.Helper()
	return withUser(t, editJSON(t, body, func(m map[string]any) {
		imps, _ := m["imp"].([]any)
		for _, imp := range imps {
			if o, ok := imp.(map[string]any); ok {
				o["secure"] = v
			}
		}
	}), uid)
}

// secureCorpus is every request of the Prebid Server corpus and the spec
// samples.
func secureCorpus(t *testing.T) []string {
	t.Helper()
	files, _ := filepath.Glob("/work/shared/openrtb/prebid-corpus/*.json")
	if len(files) == 0 {
		files, _ = filepath.Glob("../rtb/testdata/corpus/*.json")
		t.Logf("SKIPPING the full prebid corpus (missing); running the %d-request subset in ../rtb/testdata/corpus", len(files))
	}
	spec, _ := filepath.Glob(filepath.Join(specDir, "request-*.json"))
	if len(files) == 0 || len(spec) == 0 {
		t.Fatal("no corpus")
	}
	return append(files, spec...)
}

// secureFixture is a bidder over campaigns-secure.yaml and plainImages,
// with an http public_url and the given secure base.
func secureFixture(t *testing.T, secure string) *fixture {
	t.Helper()
	return newFixture(t, func(o *Options) {
		o.NBRBody = true
		o.PublicURL, o.SecurePublicURL = plainBase, secure
		o.Products = newPlainImages(o.Products)
		o.Campaigns = staticCampaigns{loadCampaigns(t, "campaigns-secure.yaml")}
	})
}

// TestSecureImps: with bidder.secure_public_url set, every bid on a secure
// imp of the corpus and the spec samples (banner, native and video) has
// only https URLs, its rtbd URLs on the secure base, and passes the
// response checks; without an https base each of those requests is a
// no-bid with nbr 509, counted.
func TestSecureImps(t *testing.T) {
	files := secureCorpus(t)
	f := secureFixture(t, secureBase)
	var bidOn []string // requests that got a bid
	kinds := map[openrtb2.MarkupType]int{}
	for _, file := range files {
		body := withSecure(t, readFile(t, file), userBulk, 1)
		r := f.bid(body)
		if r.status != 200 {
			t.Errorf("%s: status %d", filepath.Base(file), r.status)
			continue
		}
		if bytes.Contains(r.body, []byte(`"nbr"`)) {
			continue
		}
		bidOn = append(bidOn, file)
		t.Run(filepath.Base(file), func(t *testing.T) {
			_, bids := checkResponse(t, f, body, r, userBulk) // scans each bid: plainHTTP
			for _, c := range bids {
				kinds[c.bid.MType]++
				checkSecureBid(t, &c)
			}
		})
	}
	t.Logf("%d requests, every imp secure: %d with bids; bids by mtype %v", len(files), len(bidOn), kinds)
	for _, k := range []openrtb2.MarkupType{openrtb2.MarkupBanner, openrtb2.MarkupNative, openrtb2.MarkupVideo} {
		if kinds[k] == 0 {
			t.Errorf("no bid of mtype %d on a secure imp", k)
		}
	}

	// No https base: the same requests, each a counted no-bid 509.
	g := secureFixture(t, "")
	for _, file := range bidOn {
		r := g.bid(withSecure(t, readFile(t, file), userBulk, 1))
		var nb struct{ NBR int }
		if r.status != 200 || json.Unmarshal(r.body, &nb) != nil || nb.NBR != int(rtb.NoBidInsecure) {
			t.Errorf("%s without an https base: status %d %s, want nbr %d", filepath.Base(file), r.status, r.body, rtb.NoBidInsecure)
		}
	}
	if got := g.counter("rtbd_bidder_nobids_total", "nbr", "insecure"); got != float64(len(bidOn)) {
		t.Errorf("nobids{insecure} = %v, want %d", got, len(bidOn))
	}
	if got := g.counter("rtbd_bidder_bids_total"); got != 0 {
		t.Errorf("bids_total = %v without an https base, want 0", got)
	}
}

// checkSecureBid checks what checkResponse does not: the shown products
// are those with an https image, and the VAST links go through the secure
// base.
func checkSecureBid(t *testing.T, c *checked) {
	t.Helper()
	for _, img := range c.images {
		if !strings.HasPrefix(img, "https://") {
			t.Errorf("image %q in a secure banner", img)
		}
	}
	if c.bid.MType == openrtb2.MarkupVideo {
		if c.bid.CID != "video-https" {
			t.Errorf("video bid of campaign %q on a secure imp, want video-https (video-http's MediaFile is http)", c.bid.CID)
		}
		if !strings.Contains(c.bid.AdM, "<ClickThrough>"+secureBase+PathClick+"?t=") {
			t.Errorf("VAST ClickThrough does not go through %s%s: %s", secureBase, PathClick, c.bid.AdM)
		}
	}
}

// TestSecureProducts: products with a plain http image are left out of
// secure creatives and kept in the others; landing pages go through
// /click whatever their scheme; a user with only such products gets nbr
// 503 on a secure imp. Secure and plain imps of one request each get the
// base they need.
func TestSecureProducts(t *testing.T) {
	f := secureFixture(t, secureBase)
	ctx := context.Background()
	// Viewed 3 and 6 (http images), then 4 (https image, http landing).
	if err := f.users.Put(ctx, "user-http-first", &user.Profile{Viewed: []user.GroupIDs{{Group: catalogtest.BulkGroup, IDs: []int64{3, 6, 4}}}}); err != nil {
		t.Fatal(err)
	}
	if err := f.users.Put(ctx, "user-http-landing", &user.Profile{Viewed: []user.GroupIDs{{Group: catalogtest.BulkGroup, IDs: []int64{4}}}}); err != nil {
		t.Fatal(err)
	}
	if err := f.users.Put(ctx, "user-http-only", &user.Profile{Viewed: []user.GroupIDs{{Group: catalogtest.BulkGroup, IDs: []int64{3, 6, 9}}}}); err != nil {
		t.Fatal(err)
	}
	banner := readFile(t, filepath.Join(specDir, "request-1-simple-banner.json"))
	imagesOf := func(secure int) []string {
		body := withSecure(t, banner, userBulk, secure)
		_, bids := checkResponse(t, f, body, f.bid(body), userBulk)
		if len(bids) != 1 {
			t.Fatalf("secure=%d: %d bids, want 1", secure, len(bids))
		}
		return bids[0].images
	}
	var wantPlain, wantSecure []string
	for _, id := range bulkShown {
		u := "https://img.example.com/1/" + strconv.FormatInt(id, 10) + ".jpg"
		if id%3 == 0 {
			u = "http://img.example.com/1/" + strconv.FormatInt(id, 10) + ".jpg"
		} else {
			wantSecure = append(wantSecure, u)
		}
		wantPlain = append(wantPlain, u)
	}
	if got := imagesOf(0); !slices.Equal(got, wantPlain) {
		t.Errorf("plain imp images %v\nwant %v", got, wantPlain)
	}
	if got := imagesOf(1); !slices.Equal(got, wantSecure) {
		t.Errorf("secure imp images %v\nwant %v", got, wantSecure)
	}

	// Native shows one product: the first with an https image.
	native := func(uid string, secure int) []byte {
		b := nativeBid(map[string]any{"id": "n1", "native": map[string]any{"request": nativeRequest, "ver": "1.2"}, "secure": secure})
		return withUser(t, b, uid)
	}
	for _, tc := range []struct {
		secure  int
		product string
	}{{0, "/1/3.jpg"}, {1, "/1/4.jpg"}} {
		body := native("user-http-first", tc.secure)
		_, bids := checkResponse(t, f, body, f.bid(body), "user-http-first")
		if len(bids) != 1 || !strings.Contains(bids[0].bid.AdM, tc.product) {
			t.Errorf("secure=%d: native bids %+v, want product image %s", tc.secure, bids, tc.product)
			continue
		}
		// Product 4's landing page is http: still reached through /click.
		if tc.secure == 1 && (len(bids[0].landing) != 1 || bids[0].landing[0] != "http://shop.example.com/1/item/4") {
			t.Errorf("secure native click lands on %v, want http://shop.example.com/1/item/4", bids[0].landing)
		}
	}
	before := f.counter("rtbd_bidder_nobids_total", "nbr", "no_products")
	r := f.bid(native("user-http-only", 1))
	var nb struct{ NBR int }
	if json.Unmarshal(r.body, &nb) != nil || nb.NBR != int(rtb.NoBidNoProducts) {
		t.Errorf("secure imp, only http-image products: %d %s, want nbr %d", r.status, r.body, rtb.NoBidNoProducts)
	}
	if got := f.counter("rtbd_bidder_nobids_total", "nbr", "no_products"); got != before+1 {
		t.Errorf("nobids{no_products} %v -> %v, want +1", before, got)
	}
	plainBody := native("user-http-only", 0)
	if _, bids := checkResponse(t, f, plainBody, f.bid(plainBody), "user-http-only"); len(bids) != 1 {
		t.Errorf("plain imp, http-image products: %d bids, want 1", len(bids))
	}

	// Video: the http template wins plain imps, the https one secure imps.
	video := readFile(t, filepath.Join(specDir, "request-4-video.json"))
	for _, tc := range []struct {
		secure   int
		campaign string
	}{{0, "video-http"}, {1, "video-https"}} {
		body := withSecure(t, video, userBulk, tc.secure)
		_, bids := checkResponse(t, f, body, f.bid(body), userBulk)
		if len(bids) != 1 || bids[0].bid.CID != tc.campaign {
			t.Errorf("video secure=%d: bids %+v, want one of %s", tc.secure, bids, tc.campaign)
		}
	}
	// {{LANDING_URL}} of an http landing page (product 4) on a secure imp
	// is the https click URL; an https one stays (checkSecureBid: none is
	// http).
	body := withSecure(t, video, "user-http-landing", 1)
	_, bids := checkResponse(t, f, body, f.bid(body), "user-http-landing")
	if len(bids) != 1 || !strings.Contains(bids[0].bid.AdM, "<CompanionClickThrough>"+secureBase+PathClick+"?t=") ||
		!strings.Contains(bids[0].bid.AdM, "/1/4.jpg") {
		t.Errorf("secure video, product 4: bids %+v, want its companion click through %s%s", bids, secureBase, PathClick)
	}

	// One secure imp and one plain imp, with and without an https base.
	two := editJSON(t, withUser(t, banner, userBulk), func(m map[string]any) {
		imp := m["imp"].([]any)[0].(map[string]any)
		plain := map[string]any{"id": "2", "banner": map[string]any{"w": 728, "h": 90}, "secure": 0}
		imp["secure"] = 1
		m["imp"] = []any{imp, plain}
	})
	_, bids = checkResponse(t, f, two, f.bid(two), userBulk) // checkBid: each imp's base
	if len(bids) != 2 {
		t.Errorf("secure and plain imp: %d bids, want 2", len(bids))
	}
	for _, c := range bids {
		want := plainBase
		if c.bid.ImpID == "1" {
			want = secureBase
		}
		if !strings.HasPrefix(c.bid.NURL, want+PathWin) {
			t.Errorf("imp %s: nurl %s, want base %s", c.bid.ImpID, c.bid.NURL, want)
		}
	}
	g := secureFixture(t, "")
	_, bids = checkResponse(t, g, two, g.bid(two), userBulk)
	if len(bids) != 1 || bids[0].bid.ImpID != "2" {
		t.Errorf("no https base: bids %+v, want the plain imp's only", bids)
	}
}

// TestSecureBaseOptions: an https public_url serves secure imps too; a
// secure base must be https.
func TestSecureBaseOptions(t *testing.T) {
	f := newFixture(t, nil) // public_url https://bid.example.com
	if !f.b.secureURLs.ok || f.b.secureURLs.base != f.b.opts.PublicURL {
		t.Errorf("https public_url: secure base %+v, want the public one", f.b.secureURLs)
	}
	for _, tc := range []struct {
		public, secure string
		ok             bool
	}{
		{"http://bid.example.com", "https://bid.example.com/", true},
		{"https://bid.example.com", "https://other.example.com", true},
		{"http://bid.example.com", "http://bid.example.com", false},
		{"http://bid.example.com", "https://bid.example.com/?x", false},
		{"http://bid.example.com", "", true},
	} {
		o := f.opts
		o.Registerer = nil
		o.PublicURL, o.SecurePublicURL = tc.public, tc.secure
		b, err := New(o)
		if (err == nil) != tc.ok {
			t.Errorf("New(public %q, secure %q) = %v, want ok %v", tc.public, tc.secure, err, tc.ok)
			continue
		}
		if err == nil && tc.secure != "" && b.secureURLs.win != strings.TrimRight(tc.secure, "/")+PathWin+"?t=" {
			t.Errorf("secure win prefix %q", b.secureURLs.win)
		}
	}
}

// TestSecureExplain: the debug endpoint says why a secure imp got no bid
// and why a campaign's VAST template was not served on one.
func TestSecureExplain(t *testing.T) {
	banner := withSecure(t, readFile(t, filepath.Join(specDir, "request-1-simple-banner.json")), userBulk, 1)
	ex := secureFixture(t, "").b.Explain(banner)
	if ex.NBR != int(rtb.NoBidInsecure) || len(ex.Imps) != 1 || !strings.Contains(ex.Imps[0].Note, "secure_public_url") {
		t.Errorf("no https base explained as nbr %d, imps %+v", ex.NBR, ex.Imps)
	}
	video := withSecure(t, readFile(t, filepath.Join(specDir, "request-4-video.json")), userBulk, 1)
	ex = secureFixture(t, secureBase).b.Explain(video)
	found := false
	for _, imp := range ex.Imps {
		for _, c := range imp.Campaigns {
			if c.ID == "video-http" {
				found = c.Decision == "rejected" && strings.Contains(c.Reason, "http URLs")
			}
		}
	}
	if ex.Decision != "bid" || !found {
		t.Errorf("secure video explained as %+v", ex)
	}
}
