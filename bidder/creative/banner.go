package creative

import (
	"strconv"
	"unicode/utf8"
	"unsafe"

	"github.com/rtbd/rtbd/catalog/catalogpb"
)

// Linker gives the click URL of a product. rtbd's implementation appends
// its signed /click URL; the URL should be made of URL-safe characters or
// percent-escapes (anything else is attribute-escaped here).
type Linker interface {
	AppendClickURL(dst []byte, p *catalogpb.Product) []byte
}

// BaseLinker is a Linker whose click URLs share one base. AppendClickBase
// appends that absolute base URL (ending in '/'), which AppendBanner writes
// once as the document's <base href>; AppendClickRef appends p's click URL
// relative to it (one path segment: no '/', '?', '#' or ':'). A banner then
// carries the shared part (rtbd's signed click token, about 200
// characters) once instead of once per product. When AppendClickBase
// appends nothing, the banner uses AppendClickURL's absolute URLs.
type BaseLinker interface {
	Linker
	AppendClickBase(dst []byte) []byte
	AppendClickRef(dst []byte, p *catalogpb.Product) []byte
}

// Banner is what AppendBanner renders.
type Banner struct {
	// W and H are the slot size in CSS pixels (> 0).
	W, H int
	// Products to show, in order (the user's viewed products first); nil
	// entries are skipped. Shared, read-only.
	Products []*catalogpb.Product
	// Advertiser is shown in the ad marker ("Ad · Advertiser"); may be "".
	Advertiser string
	// DSALabel, when set, is shown in the ad marker instead of
	// Advertiser: the EU DSA notice (AppendDSALabel) the ad renders itself.
	DSALabel string
	// Links gives each product's click URL; nil links to the product's
	// landing URL directly (tests and previews only). A product the Linker
	// gives no URL for gets a cell without a link target (no href).
	Links Linker
	// Cells, when set, keeps the products' rendered cells for the next
	// banners (see CellCache for the products it suits). The markup is
	// the same with or without it.
	Cells *CellCache
	// PlainLinks says the Linker's URLs never need HTML escaping (printable
	// ASCII without & < > " ' \\: rtbd's, whose bases are checked once):
	// they are then written without that check.
	PlainLinks bool
	// ImpURL, when set, is the ad's impression tracker (rtbd's /imp URL):
	// the banner carries it as a 1x1 image, attribute-escaped.
	ImpURL string
}

// Layout is the arrangement of products in a banner.
type Layout int

// Layouts.
const (
	LayoutGrid   Layout = iota // rectangles: 300x250, 336x280, 300x600 ...
	LayoutStrip                // leaderboards: 728x90, 970x90, 468x60 ...
	LayoutColumn               // skyscrapers: 160x600, 120x600 ...
	LayoutSingle               // small mobile banners: 320x50, 300x50, 320x100 ...
)

// String returns "grid", "strip", "column" or "single".
func (l Layout) String() string {
	switch l {
	case LayoutStrip:
		return "strip"
	case LayoutColumn:
		return "column"
	case LayoutSingle:
		return "single"
	}
	return "grid"
}

// maxCells bounds the products on one page of a banner.
const maxCells = 6

// layoutFor returns the layout of a w x h banner and its cells per page as
// columns x rows.
func layoutFor(w, h int) (l Layout, cols, rows int) {
	switch {
	case h <= 100 && w <= 320, h < 60, w < 100:
		return LayoutSingle, 1, 1
	case w >= 3*h:
		return LayoutStrip, clamp(w/145, 1, maxCells), 1
	case h >= 2*w && w < 250:
		return LayoutColumn, 1, clamp(h/150, 1, maxCells)
	}
	cols, rows = clamp(w/140, 1, 3), clamp(h/115, 1, 3)
	for cols*rows > maxCells {
		rows--
	}
	return LayoutGrid, cols, rows
}

func clamp(v, lo, hi int) int {
	return max(lo, min(v, hi))
}

// AppendBanner appends the HTML document of b to dst. Products without a
// usable image still get a cell with their title and price. With no
// product it writes an ad marker only; the bidder never bids that.
//
// The document is JSON-safe (valid UTF-8 without '"', '\\', control
// characters, U+2028 or U+2029: rtb.JSONSafe), whatever the products and
// links hold, so that a bid response can carry it without escaping
// (rtb.Encoder.SafeAdM). FuzzBanner holds it to that.
func AppendBanner(dst []byte, b *Banner) []byte {
	w, h := max(b.W, 1), max(b.H, 1)
	layout, cols, rows := layoutFor(w, h)
	per := cols * rows
	cellW, cellH := w/cols, h/rows
	horizontal := cellW*10 >= cellH*16 // wide cells: image left, text right

	dst = append(dst, `<!DOCTYPE html><html><head><meta charset=utf-8>`...)
	// The base comes before any element with a URL (HTML: "the first base
	// element with an href attribute" sets the document's base URL).
	// Its target=_blank opens every product link in a new browsing
	// context, said once instead of on each link; browsers imply
	// rel=noopener for target=_blank (HTML's "obtain a browsing context to
	// use for a navigation", since 2019: Chrome 88, Firefox 79, Safari
	// 12.1), so that is not repeated on each link either. Without a base
	// URL there is no <base> at all (absolute links are for SSPs that
	// rewrite or re-host the markup, where a <base> could reach beyond
	// it): each link then carries its own target and rel.
	const baseOpen = `<base target=_blank href='`
	var base BaseLinker
	if bl, ok := b.Links.(BaseLinker); ok {
		dst = append(dst, baseOpen...)
		start := len(dst)
		if dst = appendLink(dst, b.PlainLinks, bl.AppendClickBase); len(dst) > start {
			dst = append(dst, `'>`...)
			base = bl
		} else {
			dst = dst[:start-len(baseOpen)]
		}
	}
	dst = append(dst, `<meta name=viewport content='width=`...)
	dst = strconv.AppendInt(dst, int64(w), 10)
	dst = append(dst, `'><style>*{box-sizing:border-box;margin:0;padding:0}html,body{width:`...)
	dst = appendPx(dst, w)
	dst = append(dst, `;height:`...)
	dst = appendPx(dst, h)
	dst = append(dst, `;overflow:hidden;background:#fff;color:#222;font:`...)
	if cellH < 70 {
		dst = append(dst, `11px`...)
	} else {
		dst = append(dst, `12px`...)
	}
	dst = append(dst, `/1.25 -apple-system,'Segoe UI',Helvetica,Arial,sans-serif}`+
		`.ad{position:relative;display:flex;width:100%;height:100%;overflow-x:auto;overflow-y:hidden;scroll-snap-type:x mandatory;scrollbar-width:none}`+
		`.pg{flex:0 0 100%;height:100%;display:grid;gap:2px;padding:2px;scroll-snap-align:start;grid-template-columns:repeat(`...)
	dst = strconv.AppendInt(dst, int64(cols), 10)
	dst = append(dst, `,minmax(0,1fr));grid-template-rows:repeat(`...)
	dst = strconv.AppendInt(dst, int64(rows), 10)
	// Cells are styled by position, not by class: a cell is `.pg>a`, its
	// text `a>span`, the title `a i`, the price `a b` (a bare 15-product
	// banner carries 1 KiB less markup than with a class on each).
	dst = append(dst, `,minmax(0,1fr))}`+
		`.pg>a{display:flex;min-width:0;min-height:0;overflow:hidden;color:inherit;text-decoration:none;border:1px solid #eee;border-radius:3px;padding:2px;gap:3px;flex-direction:`...)
	if horizontal {
		dst = append(dst, `row;align-items:center}a img{height:100%;max-width:45%;object-fit:contain;flex:0 0 auto}`...)
	} else {
		dst = append(dst, `column}a img{width:100%;flex:1 1 auto;min-height:0;object-fit:contain}`...)
	}
	dst = append(dst, `a>span{display:flex;flex-direction:column;min-width:0}`+
		`a i{font-style:normal;white-space:nowrap;overflow:hidden;text-overflow:ellipsis}`+
		`a b{color:#c4161c;white-space:nowrap}a s{color:#777;font-weight:normal;margin-right:4px}`+
		`.by{position:absolute;top:0;right:0;padding:0 3px;font-size:9px;line-height:12px;color:#555;background:rgba(255,255,255,.85)}`+
		`</style></head><body><div class=ad data-layout=`...)
	dst = append(dst, layout.String()...)
	dst = append(dst, '>')

	n, hits := 0, int64(0)
	for _, p := range b.Products {
		if p == nil {
			continue
		}
		if n%per == 0 {
			if n > 0 {
				dst = append(dst, `</div>`...)
			}
			dst = append(dst, `<div class=pg>`...)
		}
		var hit bool
		dst, hit = appendCell(dst, p, b.Links, base, b.Cells, b.PlainLinks)
		if hit {
			hits++
		}
		n++
	}
	if b.Cells != nil {
		b.Cells.count(hits, int64(n)-hits)
	}
	if n > 0 {
		dst = append(dst, `</div>`...)
	}
	dst = append(dst, `</div><span class=by>Ad`...)
	if label := b.Advertiser; label != "" || b.DSALabel != "" {
		if b.DSALabel != "" {
			label = b.DSALabel
		}
		dst = append(dst, ` &#183; `...)
		dst = appendHTML(dst, label)
	}
	dst = append(dst, `</span>`...)
	if b.ImpURL != "" {
		dst = append(dst, `<img src='`...)
		dst = appendHTML(dst, b.ImpURL)
		dst = append(dst, `' width=1 height=1 alt='' style='position:absolute;left:0;bottom:0;border:0'>`...)
	}
	return append(dst, `</body></html>`...)
}

func appendPx(dst []byte, v int) []byte {
	dst = strconv.AppendInt(dst, int64(v), 10)
	return append(dst, "px"...)
}

// appendCell appends one product cell: a link around image, title, price.
// With base set (the document has its <base href>), the link is base's
// relative reference for p. With cells set, the body comes from there when
// it can (hit).
func appendCell(dst []byte, p *catalogpb.Product, links Linker, base BaseLinker, cells *CellCache, plainLinks bool) (_ []byte, hit bool) {
	if base != nil {
		dst = append(dst, `<a href='`...)
	} else {
		dst = append(dst, `<a target=_blank rel=noopener href='`...)
	}
	start := len(dst)
	switch {
	case base != nil:
		dst = appendLink(dst, plainLinks, func(d []byte) []byte { return base.AppendClickRef(d, p) })
	case links != nil:
		dst = appendLink(dst, plainLinks, func(d []byte) []byte { return links.AppendClickURL(d, p) })
	case IsHTTPURL(p.LandingUrl):
		dst = appendHTML(dst, p.LandingUrl)
	}
	if len(dst) == start { // nowhere to go: a cell without a link target
		dst = dst[:start-len(` href='`)]
		dst = append(dst, '>')
	} else {
		dst = append(dst, `'>`...)
	}
	if cells != nil {
		return cells.appendBody(dst, p)
	}
	return appendCellBody(dst, p), false
}

// appendCellBody appends what follows the link's start tag in p's cell:
// the image, the title and the prices, and the link's end tag.
func appendCellBody(dst []byte, p *catalogpb.Product) []byte {
	if IsHTTPURL(p.ImageUrl) {
		dst = append(dst, `<img src='`...)
		dst = appendHTML(dst, p.ImageUrl)
		// alt='': the title is the link's visible text right after the
		// image, so the image is decorative (WAI images tutorial,
		// "functional images": an image beside link text that says the
		// same gets a null alt). Repeating the title would make screen
		// readers say it twice, and it cost 3.5% of the 15-product bench
		// response (8,817 -> 8,507 bytes), more with long titles.
		dst = append(dst, `' alt=''>`...)
	}
	dst = append(dst, `<span><i>`...)
	dst = appendHTML(dst, p.Title)
	dst = append(dst, `</i><b>`...)
	if p.SalePriceMicros > 0 && p.SalePriceMicros < p.PriceMicros {
		dst = append(dst, `<s>`...)
		dst = AppendPrice(dst, p.PriceMicros, p.Currency)
		dst = append(dst, `</s>`...)
		dst = AppendPrice(dst, p.SalePriceMicros, p.Currency)
	} else {
		dst = AppendPrice(dst, p.PriceMicros, p.Currency)
	}
	return append(dst, `</b></span></a>`...)
}

// appendLink appends what add (a method of links) appends, attribute-escaped
// if it has anything to escape (checked 8 bytes at a time, unless
// plainLinks vouches for it: a click URL is printable ASCII without
// & < > " ' \\, and then it is kept as it is). The
// URL is built in dst's spare room and then escaped into place.
func appendLink(dst []byte, plainLinks bool, add func([]byte) []byte) []byte {
	start := len(dst)
	dst = add(dst)
	if plainLinks || plain(dst[start:]) {
		return dst
	}
	u := string(dst[start:]) // rare path: allocation accepted
	return appendHTML(dst[:start], u)
}

// IsPlain reports whether s is printable ASCII other than & < > " ' \\
// (nothing HTML escaping would change).
func IsPlain(s string) bool {
	return plain(unsafe.Slice(unsafe.StringData(s), len(s)))
}

// plain reports whether b is printable ASCII other than & < > " ' \\
// (nothing appendHTML would change).
func plain(b []byte) bool {
	s := unsafe.String(unsafe.SliceData(b), len(b))
	i := skipPlain(s, 0)
	for ; i < len(s); i++ {
		if c := s[i]; c >= utf8.RuneSelf || htmlEscapes[c] != "" {
			return false
		}
	}
	return true
}
