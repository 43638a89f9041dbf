package creative

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"math/rand/v2"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	xhtml "golang.org/x/net/html"

	"github.com/rtbd/rtbd/catalog/catalogpb"
	"github.com/rtbd/rtbd/rtb"
)

// evil is a product whose every text tries to break out of its context.
func evil() *catalogpb.Product {
	return &catalogpb.Product{
		ProductId: 7, ProductGroupId: 1122,
		Title:    `<script>alert("x")</script> Tom & Jerry's "best" </span></a><img src=x onerror=alert(1)>`,
		ImageUrl: `https://img.example.com/7.jpg?a=1&b="2"><script>`,
		Width:    300, Height: 300,
		LandingUrl:  `https://shop.example.com/item/7?x=1&y=2`,
		PriceMicros: 1_980_000_000, SalePriceMicros: 1_480_000_000, Currency: "JPY",
		Brand: "Acme & Co", Description: "Soft.\nWashable </script>",
	}
}

func products(n int) []*catalogpb.Product {
	ps := make([]*catalogpb.Product, n)
	for i := range ps {
		ps[i] = &catalogpb.Product{
			ProductId: int64(100 + i), ProductGroupId: 1122,
			Title:    fmt.Sprintf("Product %d", 100+i),
			ImageUrl: fmt.Sprintf("https://img.example.com/1122/%d.jpg", 100+i),
			Width:    300, Height: 300,
			LandingUrl:  fmt.Sprintf("https://shop.example.com/item/%d", 100+i),
			PriceMicros: int64(1000+i) * 1_000_000, Currency: "JPY",
		}
	}
	return ps
}

// testLinks makes click URLs that name the product, as rtbd's signed ones do.
type testLinks struct{}

func (testLinks) AppendClickURL(dst []byte, p *catalogpb.Product) []byte {
	return fmt.Appendf(dst, "https://bid.example/click?t=TOKEN-%d", p.ProductId)
}

// parsed is what a banner's HTML holds, read back by a real HTML parser.
type parsed struct {
	tags  map[string]int
	bases []string // <base href> values, in document order
	// targets holds the target attribute of every element that has one,
	// as "element=value".
	targets []string
	hrefs   []string
	srcs    []string
	texts   []string
	attrs   []string // every attribute name seen
	styles  int
}

func parseHTML(t *testing.T, doc []byte) parsed {
	t.Helper()
	root, err := xhtml.Parse(strings.NewReader(string(doc)))
	if err != nil {
		t.Fatalf("HTML does not parse: %v", err)
	}
	p := parsed{tags: map[string]int{}}
	var walk func(n *xhtml.Node)
	walk = func(n *xhtml.Node) {
		switch n.Type {
		case xhtml.ElementNode:
			p.tags[n.Data]++
			for _, a := range n.Attr {
				p.attrs = append(p.attrs, a.Key)
				switch {
				case n.Data == "a" && a.Key == "href":
					p.hrefs = append(p.hrefs, a.Val)
				case n.Data == "img" && a.Key == "src":
					p.srcs = append(p.srcs, a.Val)
				case n.Data == "base" && a.Key == "href":
					p.bases = append(p.bases, a.Val)
				}
				if a.Key == "target" {
					p.targets = append(p.targets, n.Data+"="+a.Val)
				}
			}
			if n.Data == "base" && (n.Parent == nil || n.Parent.Data != "head" || p.tags["style"] > 0 || p.tags["img"] > 0) {
				p.bases = append(p.bases, "MISPLACED")
			}
			if n.Data == "style" {
				p.styles++
			}
		case xhtml.TextNode:
			if n.Parent != nil && n.Parent.Data != "style" {
				p.texts = append(p.texts, n.Data)
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(root)
	return p
}

func TestBannerEscaping(t *testing.T) {
	p := evil()
	doc := AppendBanner(nil, &Banner{W: 300, H: 250, Products: []*catalogpb.Product{p}, Advertiser: `Shop <b>"X"</b>`, Links: testLinks{}})
	got := parseHTML(t, doc)
	if got.tags["script"] != 0 {
		t.Fatalf("a <script> element got through:\n%s", doc)
	}
	allowed := map[string]bool{"html": true, "head": true, "base": true, "meta": true, "style": true, "body": true, "div": true,
		"a": true, "img": true, "span": true, "i": true, "b": true, "s": true}
	for tag := range got.tags {
		if !allowed[tag] {
			t.Errorf("unexpected element <%s>", tag)
		}
	}
	for _, a := range got.attrs {
		if strings.HasPrefix(a, "on") {
			t.Errorf("event handler attribute %q", a)
		}
	}
	if len(got.hrefs) != 1 || got.hrefs[0] != "https://bid.example/click?t=TOKEN-7" {
		t.Errorf("hrefs %q", got.hrefs)
	}
	if len(got.srcs) != 1 || got.srcs[0] != p.ImageUrl {
		t.Errorf("img src %q, want the URL intact %q", got.srcs, p.ImageUrl)
	}
	all := strings.Join(got.texts, "|")
	if !strings.Contains(all, p.Title) {
		t.Errorf("title not shown as text: %q", all)
	}
	if !strings.Contains(all, `Shop <b>"X"</b>`) {
		t.Errorf("advertiser not shown as text: %q", all)
	}
	if !strings.Contains(all, "¥1,980") || !strings.Contains(all, "¥1,480") {
		t.Errorf("prices missing: %q", all)
	}
	if !strings.Contains(string(doc), "<s>¥1,980</s>¥1,480") {
		t.Errorf("list price not struck through before the sale price")
	}
}

func TestBannerRejectsNonHTTPURLs(t *testing.T) {
	p := evil()
	p.ImageUrl = "javascript:alert(1)"
	p.LandingUrl = "javascript:alert(2)"
	doc := AppendBanner(nil, &Banner{W: 320, H: 50, Products: []*catalogpb.Product{p}})
	if strings.Contains(strings.ToLower(string(doc)), "javascript:") {
		t.Fatalf("javascript: URL in the markup:\n%s", doc)
	}
	got := parseHTML(t, doc)
	if len(got.srcs) != 0 {
		t.Errorf("img with a non-http src: %q", got.srcs)
	}
}

func TestLayouts(t *testing.T) {
	cases := []struct {
		w, h       int
		layout     Layout
		cols, rows int
	}{
		{300, 250, LayoutGrid, 2, 2},
		{336, 280, LayoutGrid, 2, 2},
		{300, 600, LayoutGrid, 2, 3},
		{728, 90, LayoutStrip, 5, 1},
		{970, 90, LayoutStrip, 6, 1},
		{468, 60, LayoutStrip, 3, 1},
		{160, 600, LayoutColumn, 1, 4},
		{120, 600, LayoutColumn, 1, 4},
		{320, 50, LayoutSingle, 1, 1},
		{300, 50, LayoutSingle, 1, 1},
		{320, 100, LayoutSingle, 1, 1},
		{1, 1, LayoutSingle, 1, 1},
	}
	for _, c := range cases {
		l, cols, rows := layoutFor(c.w, c.h)
		if l != c.layout || cols != c.cols || rows != c.rows {
			t.Errorf("%dx%d: %s %dx%d, want %s %dx%d", c.w, c.h, l, cols, rows, c.layout, c.cols, c.rows)
		}
	}
}

// TestBannerPages: every product appears, with its own link, in pages of
// the layout's cell count.
func TestBannerPages(t *testing.T) {
	for _, size := range [][2]int{{300, 250}, {728, 90}, {160, 600}, {320, 50}} {
		ps := products(15)
		doc := AppendBanner(nil, &Banner{W: size[0], H: size[1], Products: ps, Links: testLinks{}})
		got := parseHTML(t, doc)
		if len(got.hrefs) != 15 || len(got.srcs) != 15 {
			t.Errorf("%v: %d links, %d images, want 15", size, len(got.hrefs), len(got.srcs))
			continue
		}
		for i, p := range ps {
			if got.srcs[i] != p.ImageUrl || got.hrefs[i] != fmt.Sprintf("https://bid.example/click?t=TOKEN-%d", p.ProductId) {
				t.Errorf("%v: product %d: %q %q", size, i, got.srcs[i], got.hrefs[i])
			}
		}
		_, cols, rows := layoutFor(size[0], size[1])
		wantPages := (15 + cols*rows - 1) / (cols * rows)
		if pages := strings.Count(string(doc), `<div class=pg>`); pages != wantPages {
			t.Errorf("%v: %d pages, want %d", size, pages, wantPages)
		}
		if !strings.Contains(string(doc), fmt.Sprintf("width:%dpx;height:%dpx", size[0], size[1])) {
			t.Errorf("%v: body not sized", size)
		}
	}
}

func TestAppendHTMLMatchesStdlib(t *testing.T) {
	for _, s := range []string{"", "plain", `<a href="x">&'`, "日本語 & <>"} {
		if got := string(appendHTML(nil, s)); got != html.EscapeString(s) {
			t.Errorf("%q: %q, html.EscapeString %q", s, got, html.EscapeString(s))
		}
	}
	// Beyond html.EscapeString: controls, backslash and U+2028/9 become
	// numeric references (JSON-safe), which unescape to the same text.
	for in, want := range map[string]string{
		"tab\tnl\ncr\r\x01": "tab&#9;nl&#10;cr&#13;&#1;",
		`C:\dir`:            "C:&#92;dir",
		"a\u2028b\u2029c":   "a&#8232;b&#8233;c",
	} {
		got := string(appendHTML(nil, in))
		if got != want || html.UnescapeString(got) != in || !rtb.JSONSafe(got) {
			t.Errorf("appendHTML(%q) = %q, want %q (unescaping to the input, JSON-safe)", in, got, want)
		}
	}
	if got := string(appendHTML(nil, "a\x00b\xffc")); got != "a\uFFFDb\uFFFDc" {
		t.Errorf("NUL/invalid UTF-8: %q", got)
	}
}

// TestAppendPrice: money.AppendDisplay (tested there) for ISO 4217
// codes, the code HTML-escaped otherwise.
func TestAppendPrice(t *testing.T) {
	for _, c := range []struct {
		micros int64
		cur    string
		want   string
	}{
		{1_980_500_000, "JPY", "¥1,981"},
		{9_900_000, "CHF", "9.90 CHF"},
		{999_999, "", "1.00"},
		{12_500_000, "<b>", "12.50 &lt;b&gt;"},
		{12_500_000, "usd", "12.50 usd"},
	} {
		if got := string(AppendPrice(nil, c.micros, c.cur)); got != c.want {
			t.Errorf("%d %s: %q, want %q", c.micros, c.cur, got, c.want)
		}
	}
}

func TestIsHTTPURL(t *testing.T) {
	for u, want := range map[string]bool{
		"https://a.example/x": true, "HTTP://A.example": true, "http://a": true,
		"javascript:alert(1)": false, "//a.example/x": false, "https://": false, "https:///x": false,
		"data:image/png;base64,xx": false, "https://a.example/x y": false, "https://a.example/\n": false, "": false,
	} {
		if IsHTTPURL(u) != want {
			t.Errorf("%q: %v", u, !want)
		}
	}
}

const nativeReq = `{"ver":"1.2","context":2,"plcmttype":1,"assets":[
 {"id":1,"required":1,"title":{"len":20}},
 {"id":2,"required":1,"img":{"type":3,"wmin":200,"hmin":200}},
 {"id":3,"img":{"type":1,"w":50,"h":50}},
 {"id":4,"required":0,"data":{"type":1}},
 {"id":5,"data":{"type":6}},
 {"id":6,"data":{"type":7}},
 {"id":7,"data":{"type":3}},
 {"id":8,"data":{"type":2,"len":10}},
 {"id":9,"data":{"type":11}},
 {"id":10,"data":{"type":12}}]}`

type nativeResp struct {
	Ver    string `json:"ver"`
	Assets []struct {
		ID       int64 `json:"id"`
		Required int   `json:"required"`
		Title    *struct {
			Text string `json:"text"`
		} `json:"title"`
		Img *struct {
			URL  string `json:"url"`
			W, H int
		} `json:"img"`
		Data *struct {
			Value string `json:"value"`
		} `json:"data"`
	} `json:"assets"`
	Link struct {
		URL string `json:"url"`
	} `json:"link"`
}

func TestNative(t *testing.T) {
	for _, wrapped := range []bool{false, true} {
		s := nativeReq
		if wrapped {
			s = `{"native":` + s + `}`
		}
		var nr NativeRequest
		if err := ParseNative(s, &nr); err != nil {
			t.Fatal(err)
		}
		if nr.Wrapped != wrapped || len(nr.Request.Assets) != 10 {
			t.Fatalf("wrapped %v, %d assets", nr.Wrapped, len(nr.Request.Assets))
		}
		p := evil()
		out, err := AppendNative(nil, &Native{Request: &nr, Products: []*catalogpb.Product{nil, p}, Advertiser: "Acme", Links: testLinks{}})
		if err != nil {
			t.Fatal(err)
		}
		var resp nativeResp
		if wrapped {
			var env struct{ Native *nativeResp }
			if err := json.Unmarshal(out, &env); err != nil || env.Native == nil {
				t.Fatalf("wrapped response %s: %v", out, err)
			}
			resp = *env.Native
		} else if err := json.Unmarshal(out, &resp); err != nil {
			t.Fatalf("response %s: %v", out, err)
		}
		if resp.Ver != "1.2" || resp.Link.URL != "https://bid.example/click?t=TOKEN-7" {
			t.Errorf("ver %q link %q", resp.Ver, resp.Link.URL)
		}
		byID := map[int64]int{}
		for i, a := range resp.Assets {
			byID[a.ID] = i
		}
		if _, ok := byID[7]; ok {
			t.Errorf("rating asset filled")
		}
		// The optional 50x50 icon is left out: the 300x300 product
		// image is no icon (and there is no resize service).
		if _, ok := byID[3]; ok {
			t.Errorf("icon asset filled with the main image")
		}
		if len(resp.Assets) != 8 {
			t.Errorf("%d assets, want 8: %s", len(resp.Assets), out)
		}
		a := resp.Assets[byID[1]]
		if a.Title == nil || a.Title.Text != string([]rune(p.Title)[:20]) || a.Required != 1 {
			t.Errorf("title asset %+v", a)
		}
		if a := resp.Assets[byID[2]]; a.Img == nil || a.Img.URL != p.ImageUrl || a.Img.W != 300 {
			t.Errorf("main image %+v", a.Img)
		}
		want := map[int64]string{4: "Acme", 5: "¥1,980", 6: "¥1,480", 8: "Soft.\nWash", 9: "shop.example.com", 10: "Shop now"}
		for id, v := range want {
			if a := resp.Assets[byID[id]]; a.Data == nil || a.Data.Value != v {
				t.Errorf("asset %d: %+v, want %q", id, a.Data, v)
			}
		}
		if strings.Contains(string(out), "<") {
			t.Errorf("raw '<' in native JSON: %s", out)
		}
	}
}

func TestNativeUnfillable(t *testing.T) {
	for _, s := range []string{
		`{"assets":[{"id":1,"required":1,"video":{"mimes":["video/mp4"]}}]}`,
		`{"assets":[{"id":1,"required":1,"img":{"type":2}}]}`,
		`{"assets":[{"id":1,"required":1,"img":{"type":3,"wmin":1200}}]}`,
		`{"assets":[{"id":1,"required":1,"data":{"type":3}}]}`,
	} {
		var nr NativeRequest
		if err := ParseNative(s, &nr); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		dst := []byte("keep")
		out, err := AppendNative(dst, &Native{Request: &nr, Products: []*catalogpb.Product{evil()}})
		if !errors.Is(err, ErrUnfillable) || string(out) != "keep" {
			t.Errorf("%s: %v %q", s, err, out)
		}
	}
	var nr NativeRequest
	_ = ParseNative(nativeReq, &nr)
	if _, err := AppendNative(nil, &Native{Request: &nr}); !errors.Is(err, ErrUnfillable) {
		t.Errorf("no product: %v", err)
	}
}

func TestParseNativeBad(t *testing.T) {
	for _, s := range []string{
		"", "[]", "null", `"x"`, `{"assets":[]}`, `{"assets":"x"}`, `{"assets":[{"id":"a"}]}`,
		`{"native":{"assets":[]}}`, "{" + strings.Repeat(`"a":{`, 40) + strings.Repeat("}", 41),
		`{"assets":[{"id":1,"title":{"len":5}}]` + "\xff}", strings.Repeat(" ", maxNativeBytes+1),
		`{"assets":[` + strings.Repeat(`{"id":1,"title":{"len":5}},`, 70) + `{"id":1}]}`,
	} {
		var nr NativeRequest
		if err := ParseNative(s, &nr); !errors.Is(err, ErrNativeRequest) {
			t.Errorf("%.60q: %v", s, err)
		}
	}
}

func TestVAST(t *testing.T) {
	tmpl := `<VAST version="3.0"><Ad><InLine><AdTitle>{{TITLE}}</AdTitle><Impression>https://x/imp?p=${AUCTION_PRICE}</Impression>` +
		`<Creatives><Creative><Linear><VideoClicks><ClickThrough>{{CLICK_URL}}</ClickThrough></VideoClicks></Linear></Creative>` +
		`<Creative><CompanionAds><Companion><StaticResource creativeType="image/jpeg">{{IMAGE_URL}}</StaticResource></Companion></CompanionAds></Creative></Creatives>` +
		`<Advertiser>{{ADVERTISER}}</Advertiser><Extensions><Extension>{{PRICE}} {{UNKNOWN}} {{LANDING_URL}}</Extension></Extensions></InLine></Ad></VAST>`
	p := evil()
	out := string(AppendVAST(nil, &VAST{Template: tmpl, Products: []*catalogpb.Product{p}, Advertiser: "A&B", Links: testLinks{}}))
	for _, want := range []string{
		"<AdTitle>&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt; Tom &amp; Jerry&#39;s",
		"<ClickThrough>https://bid.example/click?t=TOKEN-7</ClickThrough>",
		"${AUCTION_PRICE}", "<Advertiser>A&amp;B</Advertiser>", "¥1,480 {{UNKNOWN}} https://shop.example.com/item/7?x=1&amp;y=2",
		"https://img.example.com/7.jpg?a=1&amp;b=&#34;2&#34;&gt;&lt;script&gt;",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
	if strings.Contains(out, "<script>") {
		t.Error("unescaped <script>")
	}
	if got := string(AppendVAST(nil, &VAST{Template: "<a>{{TITLE}}</a>{{CLICK_URL"})); got != "<a></a>{{CLICK_URL" {
		t.Errorf("no product / unterminated: %q", got)
	}
}

type ampLinks struct{}

func (ampLinks) AppendClickURL(dst []byte, p *catalogpb.Product) []byte {
	return append(dst, `https://x.example/c?a=1&b="2"`...)
}

func TestLinkerEscaping(t *testing.T) {
	p := products(1)
	doc := string(AppendBanner(nil, &Banner{W: 300, H: 250, Products: p, Links: ampLinks{}}))
	if !strings.Contains(doc, `href='https://x.example/c?a=1&amp;b=&#34;2&#34;'`) {
		t.Errorf("an unsafe Linker URL was not escaped:\n%s", doc)
	}
	got := parseHTML(t, []byte(doc))
	if len(got.hrefs) != 1 || got.hrefs[0] != `https://x.example/c?a=1&b="2"` {
		t.Errorf("hrefs %q", got.hrefs)
	}
	doc = string(AppendBanner(nil, &Banner{W: 300, H: 250, Products: p, Links: testLinks{}}))
	if !strings.Contains(doc, `href='https://bid.example/click?t=TOKEN-100'`) {
		t.Errorf("a plain Linker URL changed:\n%s", doc)
	}
}

func TestAppendXML(t *testing.T) {
	for in, want := range map[string]string{
		`a&b<c>"d'e`:         "a&amp;b&lt;c&gt;&#34;d&#39;e",
		"tab\tnl\ncr\r":      "tab\tnl\ncr\r",
		"nul\x00bel\x07":     "nul\uFFFDbel\uFFFD",
		"bad\xffutf8 ¥1,980": "bad\uFFFDutf8 ¥1,980",
	} {
		if got := string(appendXML(nil, in)); got != want {
			t.Errorf("appendXML(%q) = %q, want %q", in, got, want)
		}
	}
}

// appendHTML, appendXML and IsHTTPURL skip 8 bytes at a time; random
// strings (every special byte, control bytes, multi-byte and invalid
// UTF-8, at every offset around the 8-byte steps) must give what a plain
// byte-by-byte reference gives.
func TestEscapingMatchesReference(t *testing.T) {
	ref := func(s string, xml bool) string {
		var b strings.Builder
		for i := 0; i < len(s); {
			r, n := utf8.DecodeRuneInString(s[i:])
			switch {
			case r == utf8.RuneError && n == 1, r == 0, xml && r < 0x20 && r != '\t' && r != '\n' && r != '\r':
				b.WriteString("\uFFFD")
			case !xml && (r < 0x20 || r == '\\' || r == '\u2028' || r == '\u2029'):
				fmt.Fprintf(&b, "&#%d;", r)
			case r == '&':
				b.WriteString("&amp;")
			case r == '<':
				b.WriteString("&lt;")
			case r == '>':
				b.WriteString("&gt;")
			case r == '"':
				b.WriteString("&#34;")
			case r == '\'':
				b.WriteString("&#39;")
			default:
				b.WriteString(s[i : i+n])
			}
			i += n
		}
		return b.String()
	}
	refURL := func(u string) bool {
		l := strings.ToLower(u)
		var rest string
		switch {
		case strings.HasPrefix(l, "http://") && len(u) > 7:
			rest = u[7:]
		case strings.HasPrefix(l, "https://") && len(u) > 8:
			rest = u[8:]
		default:
			return false
		}
		if rest == "" || strings.ContainsAny(rest[:1], "/?#") {
			return false
		}
		for i := 0; i < len(u); i++ {
			if u[i] <= ' ' || u[i] == 0x7f {
				return false
			}
		}
		return true
	}
	pieces := []string{"a", "Z", "0", "&", "<", ">", "\"", "'", "\x00", "\t", "\n", "\x1f", " ", "!", "\x7f", "\\", "\u2028", "\u2029",
		"é", "日", "\xff", "\xe6\x97", "abcdefgh", "https://", "HTTP://", "x.example/", "?q=1", "#"}
	rng := rand.New(rand.NewPCG(7, 11))
	for n := 0; n < 20000; n++ {
		var b strings.Builder
		for k := rng.IntN(12); k > 0; k-- {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		s := b.String()
		if got, want := string(appendHTML(nil, s)), ref(s, false); got != want {
			t.Fatalf("appendHTML(%q) = %q, want %q", s, got, want)
		}
		if got, want := string(appendXML(nil, s)), ref(s, true); got != want {
			t.Fatalf("appendXML(%q) = %q, want %q", s, got, want)
		}
		if got, want := IsHTTPURL(s), refURL(s); got != want {
			t.Fatalf("IsHTTPURL(%q) = %v, want %v", s, got, want)
		}
	}
}

// baseLinks is a BaseLinker as rtbd's is: one base URL holding the token,
// a product id per link; no link for product skip.
type baseLinks struct {
	base string
	skip int64
}

func (l baseLinks) AppendClickURL(dst []byte, p *catalogpb.Product) []byte {
	if p.ProductId == l.skip {
		return dst
	}
	return fmt.Appendf(dst, "https://bid.example/click?t=TOKEN.%d", p.ProductId)
}

func (l baseLinks) AppendClickBase(dst []byte) []byte { return append(dst, l.base...) }

func (l baseLinks) AppendClickRef(dst []byte, p *catalogpb.Product) []byte {
	if p.ProductId == l.skip {
		return dst
	}
	return strconv.AppendInt(dst, p.ProductId, 10)
}

// TestBannerBaseLinks: with a BaseLinker the document has one <base href>
// in its head before any URL, every product link resolves against it (as
// a browser does) to the product's click URL, a product without a link
// gets an <a> without href, and an empty base falls back to absolute URLs.
func TestBannerBaseLinks(t *testing.T) {
	ps := products(7)
	const base = "https://bid.example/click/TOKEN/"
	doc := AppendBanner(nil, &Banner{W: 300, H: 250, Products: ps, Links: baseLinks{base: base, skip: 103}})
	got := parseHTML(t, doc)
	if len(got.bases) != 1 || got.bases[0] != base {
		t.Fatalf("bases %q, want one %q in <head> before any style or image:\n%s", got.bases, base, doc)
	}
	if got.tags["a"] != len(ps) || len(got.hrefs) != len(ps)-1 {
		t.Fatalf("%d links with %d hrefs, want %d and %d (product 103 has none):\n%s", got.tags["a"], len(got.hrefs), len(ps), len(ps)-1, doc)
	}
	b, _ := url.Parse(got.bases[0])
	i := 0
	for _, p := range ps {
		if p.ProductId == 103 {
			continue
		}
		ref, err := url.Parse(got.hrefs[i])
		if err != nil || ref.IsAbs() {
			t.Errorf("href %q: want a relative reference (%v)", got.hrefs[i], err)
		}
		if u := b.ResolveReference(ref).String(); u != base+strconv.FormatInt(p.ProductId, 10) {
			t.Errorf("href %q resolves to %q, want product %d's click URL", got.hrefs[i], u, p.ProductId)
		}
		i++
	}
	if n := strings.Count(string(doc), "TOKEN"); n != 1 {
		t.Errorf("the shared part appears %d times, want once", n)
	}

	// No base: absolute URLs from AppendClickURL, no <base>.
	doc = AppendBanner(nil, &Banner{W: 300, H: 250, Products: ps[:2], Links: baseLinks{}})
	got = parseHTML(t, doc)
	if len(got.bases) != 0 || len(got.hrefs) != 2 || got.hrefs[0] != "https://bid.example/click?t=TOKEN.100" {
		t.Errorf("empty base: bases %q hrefs %q, want none and absolute URLs", got.bases, got.hrefs)
	}

	// A Linker URL with HTML syntax is escaped: base and refs read back
	// as given, and nothing breaks out of the attribute.
	evilBase := `https://bid.example/c/'><script>x</script>/`
	doc = AppendBanner(nil, &Banner{W: 300, H: 250, Products: ps[:1], Links: baseLinks{base: evilBase}})
	got = parseHTML(t, doc)
	if got.tags["script"] != 0 || len(got.bases) != 1 || got.bases[0] != evilBase || len(got.hrefs) != 1 || got.hrefs[0] != "100" {
		t.Errorf("unsafe base: script %d, bases %q, hrefs %q:\n%s", got.tags["script"], got.bases, got.hrefs, doc)
	}
}

// TestBannerLinksOpenANewWindow: every product link opens in a new
// browsing context. With a base URL that is said once, by the head's
// <base target=_blank href=...>, never per link; without one (absolute
// links, landing URLs) there is no <base> at all, which could reach beyond
// the creative where an SSP re-hosts it, and each link has its own
// target=_blank rel=noopener.
func TestBannerLinksOpenANewWindow(t *testing.T) {
	ps := products(7)
	doc := AppendBanner(nil, &Banner{W: 300, H: 250, Products: ps, Links: baseLinks{base: "https://bid.example/click/TOKEN/"}})
	got := parseHTML(t, doc)
	if got.tags["base"] != 1 || len(got.targets) != 1 || got.targets[0] != "base=_blank" || len(got.bases) != 1 {
		t.Errorf("base links: %d <base>, targets %q, bases %q; want one <base target=_blank href> in <head>:\n%s", got.tags["base"], got.targets, got.bases, doc)
	}
	if strings.Contains(string(doc), "noopener") {
		t.Errorf("base links: rel=noopener repeated per link:\n%s", doc)
	}
	for name, links := range map[string]Linker{"absolute links": testLinks{}, "landing urls": nil, "empty base": baseLinks{}} {
		doc := AppendBanner(nil, &Banner{W: 300, H: 250, Products: ps, Links: links})
		got := parseHTML(t, doc)
		if got.tags["base"] != 0 || len(got.targets) != len(ps) || slices.ContainsFunc(got.targets, func(s string) bool { return s != "a=_blank" }) {
			t.Errorf("%s: %d <base>, targets %q; want no <base> and target=_blank on each of %d links:\n%s", name, got.tags["base"], got.targets, len(ps), doc)
		}
		if n := strings.Count(string(doc), "rel=noopener"); n != len(ps) {
			t.Errorf("%s: rel=noopener on %d links, want %d", name, n, len(ps))
		}
	}
}

// TestBannerPlainLinks: links the Linker vouches for (PlainLinks) are
// written as they are, the same markup as checked ones; IsPlain tells
// which strings need no escaping.
func TestBannerPlainLinks(t *testing.T) {
	ps := products(7)
	for _, links := range []Linker{testLinks{}, baseLinks{base: "https://bid.example/click/TOKEN/", skip: 103}} {
		checked := AppendBanner(nil, &Banner{W: 300, H: 250, Products: ps, Links: links})
		vouched := AppendBanner(nil, &Banner{W: 300, H: 250, Products: ps, Links: links, PlainLinks: true})
		if !bytes.Equal(checked, vouched) {
			t.Errorf("%T: PlainLinks changed the markup:\n%s\n%s", links, checked, vouched)
		}
	}
	for s, want := range map[string]bool{
		"https://bid.example": true, "": true, "https://bid.example/a?b=c": true,
		"https://bid.example/a&b": false, "https://bid.example/'": false, "https://bïd.example": false, "https://bid.example/<": false,
	} {
		if got := IsPlain(s); got != want {
			t.Errorf("IsPlain(%q) = %v, want %v", s, got, want)
		}
	}
}
