package bidder

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prebid/openrtb/v20/openrtb2"
	xhtml "golang.org/x/net/html"

	"github.com/rtbd/rtbd/bidder/token"
	"github.com/rtbd/rtbd/catalog/catalogtest"
	"github.com/rtbd/rtbd/rtb"
)

// specDir holds the OpenRTB 2.6 spec examples (copies of
// shared/openrtb/examples).
const specDir = "../rtb/testdata"

// bulkShown are the products userBulk's medium creative shows, in order:
// 5 viewed (1..5), then 10 recommended (11..19, 21: 20 is out of stock).
var bulkShown = []int64{1, 2, 3, 4, 5, 11, 12, 13, 14, 15, 16, 17, 18, 19, 21}

// checked is what checkBid found in one bid.
type checked struct {
	bid     openrtb2.Bid
	clicks  []string // click URLs of the adm
	images  []string
	landing []string // landing URLs the clicks carry
}

// checkResponse validates a 200 bid response against its request, field by
// field, and returns the bids.
func checkResponse(t *testing.T, f *fixture, reqBody []byte, r reply, uid string) (*openrtb2.BidResponse, []checked) {
	t.Helper()
	if r.status != 200 {
		t.Fatalf("status %d, want 200 (body %q)", r.status, r.body)
	}
	if r.headers["X-Openrtb-Version"] != "2.6" {
		t.Errorf("x-openrtb-version header %q", r.headers["X-Openrtb-Version"])
	}
	if ct := r.headers["Content-Type"]; !strings.HasPrefix(ct, "application/json") {
		t.Errorf("Content-Type %q", ct)
	}
	var req openrtb2.BidRequest
	if err := json.Unmarshal(reqBody, &req); err != nil {
		t.Fatal(err)
	}
	var resp openrtb2.BidResponse
	if err := json.Unmarshal(r.body, &resp); err != nil {
		t.Fatalf("response is not a BidResponse: %v\n%s", err, r.body)
	}
	// Byte for byte what rtb.AppendResponse makes of it: the banner adms
	// the encoder trusted as JSON-safe (rtb.Encoder.SafeAdM) were.
	if again, err := rtb.AppendResponse(nil, &resp); err != nil || !bytes.Equal(again, r.body) {
		t.Errorf("the response is not what AppendResponse writes (%v):\n got %s\nwant %s", err, r.body, again)
	}
	if resp.ID != req.ID {
		t.Errorf("id %q, want the request's %q", resp.ID, req.ID)
	}
	wantCur := wantCurrency(f, &req)
	if resp.Cur != wantCur {
		t.Errorf("cur %q, want %q", resp.Cur, wantCur)
	}
	if resp.NBR != nil {
		t.Errorf("nbr %d in a bid response", *resp.NBR)
	}
	perImp := map[string]int{}
	var out []checked
	for _, sb := range resp.SeatBid {
		if sb.Seat == "" {
			t.Error("seatbid without seat")
		}
		for _, bid := range sb.Bid {
			perImp[bid.ImpID]++
			var imp *openrtb2.Imp
			for i := range req.Imp {
				if req.Imp[i].ID == bid.ImpID {
					imp = &req.Imp[i]
				}
			}
			if imp == nil {
				t.Errorf("bid for impid %q: no such imp", bid.ImpID)
				continue
			}
			out = append(out, checkBid(t, f, &req, imp, &resp, &bid, sb.Seat, uid))
		}
	}
	for id, n := range perImp {
		if n > 1 {
			t.Errorf("imp %q got %d bids, want at most 1", id, n)
		}
	}
	if len(out) == 0 {
		t.Errorf("bid response without bids: %s", r.body)
	}
	return &resp, out
}

// bidNonces are the nonces of every bid checkBid has seen: each bid draws
// its own.
var bidNonces struct {
	sync.Mutex
	seen map[[16]byte]string
}

// sameNonce checks that tk carries the bid's nonce: the first token seen
// sets it (non-zero, never seen for another bid), the others must match.
func sameNonce(t *testing.T, bidID string, nonce *[16]byte, tk *token.Token) {
	t.Helper()
	switch {
	case tk.Nonce == [16]byte{}:
		t.Errorf("bid %s: %s token without a nonce", bidID, tk.Kind)
	case *nonce == [16]byte{}:
		*nonce = tk.Nonce
		bidNonces.Lock()
		defer bidNonces.Unlock()
		if bidNonces.seen == nil {
			bidNonces.seen = map[[16]byte]string{}
		}
		if other, dup := bidNonces.seen[tk.Nonce]; dup && other != bidID {
			t.Errorf("bids %s and %s share the nonce %x", other, bidID, tk.Nonce)
		}
		bidNonces.seen[tk.Nonce] = bidID
	case *nonce != tk.Nonce:
		t.Errorf("bid %s: %s token nonce %x, the bid's other tokens %x", bidID, tk.Kind, tk.Nonce, *nonce)
	}
}

func checkBid(t *testing.T, f *fixture, req *openrtb2.BidRequest, imp *openrtb2.Imp, resp *openrtb2.BidResponse, bid *openrtb2.Bid, seat, uid string) checked {
	t.Helper()
	c := checked{bid: *bid}
	var nonce [16]byte // every token of the bid carries it
	if bid.ID == "" || bid.AdID == "" || bid.CrID == "" || bid.CID == "" {
		t.Errorf("bid id %q adid %q crid %q cid %q: all required", bid.ID, bid.AdID, bid.CrID, bid.CID)
	}
	if len(bid.ADomain) == 0 || len(bid.Cat) == 0 {
		t.Errorf("adomain %v cat %v: both required", bid.ADomain, bid.Cat)
	}
	// Price >= the floor converted to the response currency.
	floor, floorCur := imp.BidFloor, imp.BidFloorCur
	if bid.DealID != "" {
		found := false
		if imp.PMP != nil {
			for _, d := range imp.PMP.Deals {
				if d.ID == bid.DealID {
					found = true
					if d.BidFloor > 0 {
						floor, floorCur = d.BidFloor, d.BidFloorCur
					}
				}
			}
		}
		if !found {
			t.Errorf("dealid %q is not a deal of the imp", bid.DealID)
		}
	} else if imp.PMP != nil && imp.PMP.PrivateAuction == 1 {
		t.Errorf("private auction imp, bid without dealid")
	}
	floorMicros, ok := convertFloor(f, req, int64(math.Round(floor*1e6)), floorCur, resp.Cur)
	if !ok {
		t.Errorf("floor currency %q unknown", floorCur)
	}
	if bid.Price <= 0 || int64(math.Round(bid.Price*1e6)) < floorMicros {
		t.Errorf("price %v %s below the floor %v %s", bid.Price, resp.Cur, floor, floorCur)
	}
	// Size among the imp's.
	if imp.Banner != nil && bid.MType == openrtb2.MarkupBanner {
		var sizes [][2]int64
		for _, fm := range imp.Banner.Format {
			sizes = append(sizes, [2]int64{fm.W, fm.H})
		}
		if imp.Banner.W != nil && imp.Banner.H != nil {
			sizes = append(sizes, [2]int64{*imp.Banner.W, *imp.Banner.H})
		}
		if !slices.Contains(sizes, [2]int64{bid.W, bid.H}) {
			t.Errorf("w/h %dx%d not among the imp's sizes %v", bid.W, bid.H, sizes)
		}
	}
	// rtbd's URLs start with the public base, on a secure imp the https
	// one; nothing the bid makes a browser load or call is plain http.
	base := f.b.opts.PublicURL
	if imp.Secure != nil && *imp.Secure == 1 {
		base = f.b.opts.SecurePublicURL
		if !strings.HasPrefix(base, "https://") {
			t.Errorf("a bid on a secure imp with the public base %q", base)
		}
		for _, u := range plainHTTP(t, bid) {
			t.Errorf("secure imp %s: bid %s has a plain http URL: %s", imp.ID, bid.ID, u)
		}
	}
	// nurl and burl: the macro and a token that verifies.
	for _, n := range []struct {
		u    string
		path string
		kind token.Kind
	}{{bid.NURL, PathWin, token.KindWin}, {bid.BURL, PathBill, token.KindBill}} {
		prefix := base + n.path + "?t="
		if !strings.HasPrefix(n.u, prefix) || !strings.HasSuffix(n.u, winMacros) {
			t.Errorf("%s URL %q: want %s...%s", n.kind, n.u, prefix, winMacros)
			continue
		}
		tok := strings.TrimSuffix(strings.TrimPrefix(n.u, prefix), winMacros)
		var tk token.Token
		if _, err := f.keys.Parse(&tk, []byte(tok), n.kind, time.Now(), nil); err != nil {
			t.Errorf("%s token does not verify: %v", n.kind, err)
			continue
		}
		if tk.Campaign != bid.CID || tk.Creative != bid.CrID || tk.Auction != req.ID || tk.Imp != bid.ImpID ||
			tk.User != uid || tk.Currency != resp.Cur || tk.PriceMicros != int64(math.Round(bid.Price*1e6)) {
			t.Errorf("%s token %+v does not match the bid", n.kind, tk)
		}
		sameNonce(t, bid.ID, &nonce, &tk)
		if tk.Expires.Sub(tk.Issued) != f.b.opts.NoticeTTL {
			t.Errorf("%s token valid %s, want %s", n.kind, tk.Expires.Sub(tk.Issued), f.b.opts.NoticeTTL)
		}
	}
	// lurl: the loss macros and a loss token of the same bid; the test bit
	// as the request's.
	if prefix, suffix := base+PathLoss+"?t=", "&r=${AUCTION_LOSS}&m=${AUCTION_MIN_TO_WIN}"; !strings.HasPrefix(bid.LURL, prefix) || !strings.HasSuffix(bid.LURL, suffix) {
		t.Errorf("lurl %q: want %s...%s", bid.LURL, prefix, suffix)
	} else {
		var tk token.Token
		if _, err := f.keys.Parse(&tk, []byte(strings.TrimSuffix(strings.TrimPrefix(bid.LURL, prefix), suffix)), token.KindLoss, time.Now(), nil); err != nil {
			t.Errorf("loss token does not verify: %v", err)
		} else {
			if tk.Campaign != bid.CID || tk.Auction != req.ID || tk.Imp != bid.ImpID || tk.Test != (req.Test == 1) {
				t.Errorf("loss token %+v does not match the bid", tk)
			}
			sameNonce(t, bid.ID, &nonce, &tk)
		}
	}
	if seat == "" {
		t.Error("no seat")
	}
	if bid.AdM == "" {
		t.Error("no adm")
		return c
	}
	switch bid.MType {
	case openrtb2.MarkupBanner:
		root, err := xhtml.Parse(strings.NewReader(bid.AdM))
		if err != nil {
			t.Fatalf("adm is not HTML: %v", err)
		}
		// Links resolve against the document's <base href>, as a
		// browser resolves them (the path form /click/TOKEN/PRODUCT).
		var base *url.URL
		var walk func(n *xhtml.Node)
		walk = func(n *xhtml.Node) {
			if n.Type == xhtml.ElementNode {
				if n.Data == "script" {
					t.Error("script element in adm")
				}
				for _, a := range n.Attr {
					switch {
					case n.Data == "base" && a.Key == "href":
						if base != nil {
							t.Error("two <base> elements")
						}
						var err error
						if base, err = url.Parse(a.Val); err != nil || !base.IsAbs() {
							t.Errorf("<base href=%q>: want an absolute URL (%v)", a.Val, err)
						}
					case n.Data == "a" && a.Key == "href":
						if base != nil {
							ref, err := url.Parse(a.Val)
							if err != nil {
								t.Errorf("href %q: %v", a.Val, err)
								continue
							}
							a.Val = base.ResolveReference(ref).String()
						}
						c.clicks = append(c.clicks, a.Val)
					case n.Data == "img" && a.Key == "src":
						c.images = append(c.images, a.Val)
					}
				}
			}
			for k := n.FirstChild; k != nil; k = k.NextSibling {
				walk(k)
			}
		}
		walk(root)
	case openrtb2.MarkupNative:
		var nr struct {
			Native *struct {
				Link struct{ URL string } `json:"link"`
			} `json:"native"`
			Link struct{ URL string } `json:"link"`
		}
		if err := json.Unmarshal([]byte(bid.AdM), &nr); err != nil {
			t.Fatalf("native adm is not JSON: %v", err)
		}
		if nr.Native != nil {
			c.clicks = append(c.clicks, nr.Native.Link.URL)
		} else {
			c.clicks = append(c.clicks, nr.Link.URL)
		}
	}
	clickPrefix := base + PathClick + "?t="
	clickBase := base + PathClickBase
	for _, cl := range c.clicks {
		// t=TOKEN.PRODUCT or /click/TOKEN/PRODUCT: the bid's click
		// token, signed once, lists the creative's products; the link
		// names one of them.
		var tokPart, pidPart string
		var ok bool
		switch {
		case strings.HasPrefix(cl, clickPrefix):
			tokPart, pidPart, ok = strings.Cut(strings.TrimPrefix(cl, clickPrefix), ".")
		case strings.HasPrefix(cl, clickBase):
			tokPart, pidPart, ok = strings.Cut(strings.TrimPrefix(cl, clickBase), "/")
		default:
			t.Errorf("click link %q goes through neither %s nor %s", cl, clickPrefix, clickBase)
			continue
		}
		pid, err := strconv.ParseInt(pidPart, 10, 64)
		if !ok || err != nil {
			t.Errorf("click link %q: want t=TOKEN.PRODUCT or /click/TOKEN/PRODUCT", cl)
			continue
		}
		var tk token.Token
		if _, err := f.keys.Parse(&tk, []byte(tokPart), token.KindClick, time.Now(), nil); err != nil {
			t.Errorf("click token does not verify: %v", err)
			continue
		}
		sameNonce(t, bid.ID, &nonce, &tk)
		if tk.Campaign != bid.CID || tk.Auction != req.ID || tk.Imp != bid.ImpID || tk.Group == 0 || !tk.HasProduct(pid) || tk.URL != "" {
			t.Errorf("click token %+v (product %d) does not match the bid", tk, pid)
		}
		// Follow the click: the landing URL comes from the catalog.
		u, _ := url.Parse(cl)
		cr := f.do("GET", u.RequestURI(), nil)
		if cr.status != 302 {
			t.Errorf("click %q: status %d, want 302", cl, cr.status)
		}
		c.landing = append(c.landing, cr.headers["Location"])
	}
	return c
}

func TestSpecExamples(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.NBRBody = true })
	cases := []struct {
		file     string
		nbr      rtb.NoBidReason // 0: a bid
		dealID   string
		seat     string
		size     [2]int64
		campaign string
	}{
		{file: "request-1-simple-banner.json", seat: "rtbd", size: [2]int64{300, 250}, campaign: "banner-medium"},
		{file: "request-2-expandable-creative.json", seat: "rtbd", size: [2]int64{300, 250}, campaign: "banner-medium"},
		{file: "request-3-mobile.json", seat: "rtbd", size: [2]int64{728, 90}, campaign: "banner-medium"},
		{file: "request-4-video.json", nbr: rtb.NoBidUnsupportedImpType},
		{file: "request-5-pmp-with-direct-deal.json", dealID: "AB-Agency1-0001", seat: "Agency1", size: [2]int64{300, 250}, campaign: "deal-agency1"},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			body := withUser(t, readFile(t, filepath.Join(specDir, tc.file)), userBulk)
			r := f.bid(body)
			if tc.nbr != 0 {
				var nb struct {
					ID  string `json:"id"`
					NBR int    `json:"nbr"`
				}
				if r.status != 200 || json.Unmarshal(r.body, &nb) != nil || nb.NBR != int(tc.nbr) {
					t.Fatalf("status %d body %s, want a no-bid with nbr %d", r.status, r.body, tc.nbr)
				}
				return
			}
			resp, bids := checkResponse(t, f, body, r, userBulk)
			if len(bids) != 1 {
				t.Fatalf("%d bids, want 1", len(bids))
			}
			c := bids[0]
			if c.bid.DealID != tc.dealID || resp.SeatBid[0].Seat != tc.seat || c.bid.CID != tc.campaign {
				t.Errorf("dealid %q seat %q campaign %q, want %q %q %q", c.bid.DealID, resp.SeatBid[0].Seat, c.bid.CID, tc.dealID, tc.seat, tc.campaign)
			}
			if [2]int64{c.bid.W, c.bid.H} != tc.size {
				t.Errorf("size %dx%d, want %v", c.bid.W, c.bid.H, tc.size)
			}
			// The creative shows the user's products, each with its image and
			// a signed click link to its landing page.
			var wantImages, wantLanding []string
			for _, id := range bulkShown {
				wantImages = append(wantImages, fmt.Sprintf("https://img.example.com/%d/%d.jpg", catalogtest.BulkGroup, id))
				wantLanding = append(wantLanding, fmt.Sprintf("https://shop.example.com/%d/item/%d", catalogtest.BulkGroup, id))
			}
			if !slices.Equal(c.images, wantImages) {
				t.Errorf("adm images %v\nwant %v", c.images, wantImages)
			}
			if !slices.Equal(c.landing, wantLanding) {
				t.Errorf("click landing URLs %v\nwant %v", c.landing, wantLanding)
			}
			// A click on the first product redirects to its landing page.
			u, _ := url.Parse(c.clicks[0])
			cr := f.do("GET", u.RequestURI(), nil)
			if cr.status != 302 || cr.headers["Location"] != wantLanding[0] {
				t.Errorf("click: status %d Location %q, want 302 %s", cr.status, cr.headers["Location"], wantLanding[0])
			}
		})
	}
	if got := f.counter("rtbd_bidder_nobids_total", "nbr", "unsupported_imp_type"); got != 1 {
		t.Errorf("nobids{unsupported_imp_type} = %v, want 1", got)
	}
	if got := f.counter("rtbd_bidder_bids_total"); got != 4 {
		t.Errorf("bids_total = %v, want 4", got)
	}
}

// TestSpecExamplesUnknownUser: the samples as they are (their user ids are
// unknown here) get a no-bid with nbr 8, or 504 for video.
func TestSpecExamplesUnknownUser(t *testing.T) {
	f := newFixture(t, nil)
	files, _ := filepath.Glob(filepath.Join(specDir, "request-*.json"))
	if len(files) != 5 {
		t.Fatalf("%d spec examples in %s, want 5", len(files), specDir)
	}
	for _, file := range files {
		r := f.bid(readFile(t, file))
		if r.status != 204 || len(r.body) != 0 {
			t.Errorf("%s: status %d body %q, want 204 and no body", filepath.Base(file), r.status, r.body)
		}
	}
	if got := f.counter("rtbd_bidder_nobids_total", "nbr", "unmatched_user"); got != 4 {
		t.Errorf("nobids{unmatched_user} = %v, want 4", got)
	}
}

// TestVideoWithVAST: a campaign with a VAST template bids on the video
// example, with the template filled.
func TestVideoWithVAST(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.Campaigns = staticCampaigns{loadCampaigns(t, "campaigns-vast.yaml")} })
	body := withUser(t, readFile(t, filepath.Join(specDir, "request-4-video.json")), userBulk)
	r := f.bid(body)
	_, bids := checkResponse(t, f, body, r, userBulk)
	if len(bids) != 1 || bids[0].bid.MType != openrtb2.MarkupVideo {
		t.Fatalf("bids %+v, want one video bid", bids)
	}
	adm := bids[0].bid.AdM
	for _, want := range []string{"<VAST", "<ClickThrough>https://bid.example.com/click?t=", "Product 1 of group 1", "https://img.example.com/1/1.jpg"} {
		if !strings.Contains(adm, want) {
			t.Errorf("VAST adm lacks %q:\n%s", want, adm)
		}
	}
}

// TestPrebidCorpus: every request of shared/openrtb/prebid-corpus gets 200
// or 204, never another status; as is (unknown users) and with a sample
// user (bids where a campaign fits), each 200 a valid bid response. It
// runs with an https public_url, and with an http one beside an https
// secure_public_url (Prebid Server's imps are secure): the same bids. With
// an image resize service as well (what a host whose native requests ask
// image sizes the catalog lacks runs), at least corpusBids bids.
func TestPrebidCorpus(t *testing.T) {
	// corpusBids is what the full corpus got before native images had to
	// fit their assets: with a resize service, no fewer.
	const corpusBids = 145
	dir := "/work/shared/openrtb/prebid-corpus"
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	full := len(files) > 0
	if len(files) == 0 {
		dir = "../rtb/testdata/corpus"
		files, _ = filepath.Glob(filepath.Join(dir, "*.json"))
		t.Logf("SKIPPING the full prebid corpus: %s is missing; running the %d-request subset in %s", "/work/shared/openrtb/prebid-corpus", len(files), dir)
	}
	if len(files) == 0 {
		t.Fatal("no corpus at all")
	}
	counts := map[string]int{}
	bases := []struct{ name, public, secure, resize string }{
		{"https public_url", "https://bid.example.com", "", ""},
		{"http public_url, https secure_public_url", plainBase, secureBase, ""},
		{"https public_url, an image resize service", "https://bid.example.com", "", "https://rs.example/r?w={w}&h={h}&u={url}"},
	}
	for _, base := range bases {
		f := newFixture(t, func(o *Options) {
			o.NBRBody = true
			o.PublicURL, o.SecurePublicURL, o.ImageResizeURL = base.public, base.secure, base.resize
		})
		bids, nobids := 0, map[int]int{}
		for _, file := range files {
			raw := readFile(t, file)
			for _, uid := range []string{"", userBulk} {
				body := raw
				if uid != "" {
					body = withUser(t, raw, uid)
				}
				r := f.bid(body)
				if r.status != 200 {
					t.Errorf("%s (user %q): status %d %s", filepath.Base(file), uid, r.status, r.body)
					continue
				}
				var probe struct {
					NBR     *int `json:"nbr"`
					SeatBid []any
				}
				if err := json.Unmarshal(r.body, &probe); err != nil {
					t.Errorf("%s: body %s: %v", filepath.Base(file), r.body, err)
					continue
				}
				if probe.NBR != nil {
					nobids[*probe.NBR]++
					continue
				}
				bids++
				t.Run(filepath.Base(file), func(t *testing.T) { checkResponse(t, f, body, r, uid) })
			}
		}
		t.Logf("%s: %d corpus requests x 2: %d bid responses, no-bids by nbr %v", base.name, len(files), bids, nobids)
		counts[base.name] = bids
		if bids == 0 {
			t.Error("no corpus request got a bid with a sample user")
		}
		if nobids[int(rtb.NoBidTechnicalError)] > 0 {
			t.Errorf("%d technical errors", nobids[int(rtb.NoBidTechnicalError)])
		}
		if nobids[int(rtb.NoBidInsecure)] > 0 {
			t.Errorf("%d no-bids 509 with an https base", nobids[int(rtb.NoBidInsecure)])
		}
	}
	if a, b := counts[bases[0].name], counts[bases[1].name]; a != b {
		t.Errorf("%d bid responses with an https public_url, %d with a separate secure_public_url: want the same", a, b)
	}
	if a, r := counts[bases[0].name], counts[bases[2].name]; r < a || (full && r < corpusBids) {
		t.Errorf("%d bid responses with an image resize service, %d without: want at least as many, and %d on the full corpus", r, a, corpusBids)
	}
}

func TestSpecDirPresent(t *testing.T) {
	if _, err := os.Stat(filepath.Join(specDir, "request-1-simple-banner.json")); err != nil {
		t.Fatal(err)
	}
}
