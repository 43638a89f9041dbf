package bidder

import (
	"slices"
	"strconv"

	"github.com/rtbd/rtbd/bidder/campaign"
	"github.com/rtbd/rtbd/bidder/creative"
	"github.com/rtbd/rtbd/catalog/catalogpb"
)

// The query after a notice URL's token: the price macro (the impression
// tracker), with the minimum bid to win (nurl, burl: on a win, the price
// to tie, for bid shading), and for the lurl (see package notice) the
// loss reason and the price that would have won.
const (
	priceMacro = "&p=${AUCTION_PRICE}"
	winMacros  = "&p=${AUCTION_PRICE}&m=${AUCTION_MIN_TO_WIN}"
	lossMacros = "&r=${AUCTION_LOSS}&m=${AUCTION_MIN_TO_WIN}"
)

// noticeURL appends prefix + tok + macros to the arena and returns it.
func (st *reqState) noticeURL(prefix, tok, macros string) string {
	a := len(st.arena)
	st.arena = append(st.arena, prefix...)
	st.arena = append(st.arena, tok...)
	st.arena = append(st.arena, macros...)
	return str(st.arena[a:])
}

// AppendClickURL implements creative.Linker: the /click URL of product p
// of the bid being rendered: the bid's markup token, a dot, the
// product id (one of the ids the token signs). Nothing is appended when
// the product has no usable landing URL.
func (st *reqState) AppendClickURL(dst []byte, p *catalogpb.Product) []byte {
	if !st.linked(p) {
		return dst
	}
	dst = append(dst, st.urls.click...)
	dst = append(dst, st.link.tok...)
	dst = append(dst, clickSep)
	return strconv.AppendInt(dst, p.ProductId, 10)
}

// AppendClickBase implements creative.BaseLinker: PublicURL/click/TOKEN/
// (SecurePublicURL on a secure imp), the bid's markup token once per
// banner, unless Options.AbsoluteClicks.
func (st *reqState) AppendClickBase(dst []byte) []byte {
	if st.b.opts.AbsoluteClicks || st.link.c == nil || len(st.link.tok) == 0 {
		return dst
	}
	dst = append(dst, st.urls.clickBase...)
	dst = append(dst, st.link.tok...)
	return append(dst, '/')
}

// AppendClickRef implements creative.BaseLinker: product p's link relative
// to AppendClickBase, its id; nothing when it has no landing URL.
func (st *reqState) AppendClickRef(dst []byte, p *catalogpb.Product) []byte {
	if !st.linked(p) {
		return dst
	}
	return strconv.AppendInt(dst, p.ProductId, 10)
}

// linked reports whether product p of the bid being rendered gets a click
// link: the bid has a markup token and p is one of the ids it lists (those
// with a landing URL). The creatives ask in product order, so the id after
// the last one found is tried first.
func (st *reqState) linked(p *catalogpb.Product) bool {
	if st.link.c == nil || len(st.link.tok) == 0 {
		return false
	}
	ids := st.clickIDs
	if k := st.link.next; k < len(ids) && ids[k] == p.ProductId {
		st.link.next++
		return true
	}
	k := slices.Index(ids, p.ProductId)
	if k >= 0 {
		st.link.next = k + 1
	}
	return k >= 0
}

// clickSep separates the token and the product id in a click URL's t
// parameter: not a base64url character, and safe in a URL and in an HTML
// attribute unescaped.
const clickSep = '.'

// landingURL is p's landing URL if it is an absolute http(s) URL; else,
// when the campaign has a click base, the landing URL resolved against it
// (a path is appended to it; nothing usable gives the click base itself).
// c may be nil (a campaign since removed): then only an absolute URL.
func landingURL(c *campaign.Campaign, p *catalogpb.Product) string {
	if creative.IsHTTPURL(p.LandingUrl) {
		return p.LandingUrl
	}
	if c == nil || !creative.IsHTTPURL(c.Creative.ClickBase) {
		return ""
	}
	base := c.Creative.ClickBase
	l := p.LandingUrl
	if !relativeOK(l) {
		return base
	}
	for len(base) > 0 && base[len(base)-1] == '/' {
		base = base[:len(base)-1]
	}
	for len(l) > 0 && l[0] == '/' {
		l = l[1:]
	}
	return base + "/" + l
}

// relativeOK reports whether l can be appended to a click base.
func relativeOK(l string) bool {
	if l == "" || len(l) > 2048 {
		return false
	}
	for i := 0; i < len(l); i++ {
		if ch := l[i]; ch <= ' ' || ch == 0x7f || ch == '"' || ch == '\'' || ch == '<' || ch == '>' || ch == '\\' {
			return false
		}
	}
	return true
}

// link is the bid the creative being rendered belongs to.
type link struct {
	c *campaign.Campaign
	// tok is the bid's markup token (in the arena), shared by the
	// click URLs of all its products: /click?t=TOKEN.PRODUCT.
	tok []byte
	// next is the index in clickIDs after the last product linked.
	next int
}

// publicURLs are the prefixes of rtbd's URLs in a bid, built once from
// one public base. A URL rtbd writes into a bid starts with one of them,
// or with base: on a secure imp those of Bidder.secureURLs.
type publicURLs struct {
	ok               bool   // a base is configured
	base             string // PublicURL or SecurePublicURL
	win, bill, click string // base + "/win?t=", "/bill?t=", "/click?t="
	imp, loss        string // base + "/imp?t=", "/loss?t="
	clickBase        string // base + "/click/"
	// plain: base needs no HTML escaping (creative.IsPlain), so neither do
	// the click links built on it (the token is base64url, the ids digits).
	plain bool
}

func newPublicURLs(base, notices string) publicURLs {
	if base == "" {
		return publicURLs{}
	}
	if notices == "" {
		notices = base
	}
	return publicURLs{ok: true, base: base, plain: creative.IsPlain(base),
		win: notices + PathWin + "?t=", bill: notices + PathBill + "?t=", click: base + PathClick + "?t=",
		imp: base + PathImp + "?t=", loss: notices + PathLoss + "?t=", clickBase: base + PathClickBase}
}
