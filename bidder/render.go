package bidder

import (
	"strconv"
	"unsafe"

	"github.com/prebid/openrtb/v20/openrtb2"

	"github.com/rtbd/rtbd/bidder/campaign"
	"github.com/rtbd/rtbd/bidder/creative"
	"github.com/rtbd/rtbd/bidder/token"
	"github.com/rtbd/rtbd/catalog/catalogpb"
	"github.com/rtbd/rtbd/rtb"
	"github.com/rtbd/rtbd/rtb/money"
)

// str returns the bytes of the arena from start as a string without
// copying. The arena is only appended to during a request, so the bytes do
// not change; the string keeps its backing array alive if the arena grows.
func str(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// addBid renders the creative and adds the bid of candidate cd on imp i.
// Its URLs start with st.urls (secure: products and template already
// checked for https).
func (b *Bidder) addBid(st *reqState, i int, cd *candidate, products []*catalogpb.Product, secure bool) rtb.NoBidReason {
	req := &st.req
	imp := &req.Imp[i]
	c := cd.c
	a := len(st.arena)
	st.newNonce() // carried by both tokens of the bid

	// crid: campaign-template-format, e.g. "c1-medium-300x250".
	st.arena = append(st.arena, c.ID...)
	st.arena = append(st.arena, '-')
	tmpl := c.Creative.Template
	if tmpl == "" {
		tmpl = campaign.TemplateMedium
	}
	st.arena = append(st.arena, tmpl...)
	st.arena = append(st.arena, '-')
	switch cd.kind {
	case mediaBanner:
		st.arena = strconv.AppendInt(st.arena, cd.w, 10)
		st.arena = append(st.arena, 'x')
		st.arena = strconv.AppendInt(st.arena, cd.h, 10)
	default:
		st.arena = append(st.arena, cd.kind.String()...)
	}
	crid := str(st.arena[a:])

	// The bid is signed once (token.Keys.AppendBid): the exchange token
	// serves its nurl, burl and lurl, the markup token its impression
	// tracker and the click links, which add their product id to it (the
	// token lists the products that get a link).
	st.clickIDs = st.clickIDs[:0]
	var group int64
	base := creative.IsHTTPURL(c.Creative.ClickBase) // every product has a landing URL
	for _, p := range products {
		if p == nil {
			continue
		}
		if group == 0 {
			group = p.ProductGroupId
		}
		if base || creative.IsHTTPURL(p.LandingUrl) { // landingURL(c, p) != ""
			st.clickIDs = append(st.clickIDs, p.ProductId)
		}
	}
	x := &b.exchanges.list[st.exchange]
	st.tok = token.Token{
		Issued: st.now, Expires: st.now.Add(b.opts.NoticeTTL), ClickExpires: st.now.Add(b.opts.ClickTTL),
		Campaign: c.ID, Creative: crid, Auction: st.req.ID, Imp: imp.ID, User: st.a.uid,
		PriceMicros: cd.price, ValueMicros: cd.value, Currency: st.a.cur, Group: group, Products: st.clickIDs,
		Nonce: st.nonce, Billing: x.Billing, Test: req.Test == 1,
	}
	if st.exchange != 0 {
		st.tok.Exchange = x.Name
	}
	shadedToken(&st.tok, cd)
	a = len(st.arena)
	mid := 0
	var err error
	st.arena, mid, err = b.opts.Keys.AppendBid(st.arena, &st.tok)
	st.tok = token.Token{}
	if err != nil {
		st.arena = st.arena[:a]
		return rtb.NoBidTechnicalError
	}
	exchTok, markupTok := str(st.arena[a:mid]), st.arena[mid:len(st.arena):len(st.arena)]
	st.link = link{c: c}
	if len(st.clickIDs) > 0 {
		st.link.tok = markupTok
	}
	// The creative's own impression tracker (/imp): native and video
	// always, banners with the pixel option or when the render bills.
	impURL := ""
	if cd.kind != mediaBanner || b.opts.BannerImpPixel || x.Billing == token.BillingRender {
		impURL = st.noticeURL(st.urls.imp, str(markupTok), priceMacro)
	}
	a = len(st.arena)
	var mtype openrtb2.MarkupType
	switch cd.kind {
	case mediaBanner:
		st.banner = creativeBanner(st, cd, products)
		st.banner.ImpURL = impURL
		if st.banner.DSALabel, _ = b.dsaLabel(st, cd); st.banner.DSALabel != "" {
			a = len(st.arena) // the label stays in the arena, before the markup
		}
		st.arena = creative.AppendBanner(st.arena, &st.banner)
		mtype = openrtb2.MarkupBanner
	case mediaNative:
		if st.nativeImp != i {
			st.nativeImp = i
			st.nativeErr = creative.ParseNative(imp.Native.Request, &st.native)
		}
		if st.nativeErr != nil {
			st.arena = st.arena[:a]
			return rtb.NoBidInvalidRequest
		}
		label, nbr := b.dsaLabel(st, cd)
		if nbr != bidMade {
			return nbr
		}
		if label != "" {
			a = len(st.arena)
		}
		st.nat = creative.Native{Request: &st.native, Products: products, Advertiser: c.Advertiser, DSALabel: label, Links: st, Resize: b.resizeFor(secure), ImpURL: impURL}
		var err error
		if st.arena, err = creative.AppendNative(st.arena, &st.nat); err != nil {
			st.arena = st.arena[:a]
			return rtb.NoBidUnsupportedImpType
		}
		mtype = openrtb2.MarkupNative
	case mediaVideo:
		st.vast = creative.VAST{Template: c.Creative.VAST, Products: products, Advertiser: c.Advertiser, Links: st, ImpURL: impURL, Secure: secure}
		st.arena = creative.AppendVAST(st.arena, &st.vast)
		mtype = openrtb2.MarkupVideo
	}
	adm := str(st.arena[a:])
	if mtype == openrtb2.MarkupBanner && adm != "" {
		st.safeAdM = append(st.safeAdM, unsafe.StringData(adm)) // JSON-safe by AppendBanner's contract
	}

	a = len(st.arena)
	st.arena = append(st.arena, b.bidIDPrefix...)
	st.arena = strconv.AppendUint(st.arena, b.bidSeq.Add(1), 36)
	bidID := str(st.arena[a:])

	nurl := st.noticeURL(st.urls.win, exchTok, winMacros)
	burl := st.noticeURL(st.urls.bill, exchTok, winMacros)
	lurl := st.noticeURL(st.urls.loss, exchTok, lossMacros)
	seat := c.Seat
	if seat == "" {
		seat = b.opts.Seat
	}
	st.bids = append(st.bids, openrtb2.Bid{
		ID:      bidID,
		ImpID:   imp.ID,
		Price:   money.Float(cd.price),
		NURL:    nurl,
		BURL:    burl,
		LURL:    lurl,
		AdM:     adm,
		AdID:    c.ID,
		ADomain: c.ADomain,
		Bundle:  c.Bundle,
		CID:     c.ID,
		CrID:    crid,
		Cat:     c.Cat,
		Attr:    c.Creative.Attr,
		DealID:  cd.dealID,
		W:       cd.w,
		H:       cd.h,
		Exp:     b.exp,
		MType:   mtype,
	})
	dsaExt(st, &cd.dsa, &st.bids[len(st.bids)-1])
	st.seats = append(st.seats, seat)
	return bidMade
}

func creativeBanner(st *reqState, cd *candidate, products []*catalogpb.Product) creative.Banner {
	return creative.Banner{W: int(cd.w), H: int(cd.h), Products: products, Advertiser: cd.c.Advertiser, Links: st, Cells: st.b.cells, PlainLinks: st.urls.plain}
}

// buildResponse fills st.resp from st.bids: one seatbid per seat.
func (b *Bidder) buildResponse(st *reqState) {
	st.resp.ID = st.req.ID
	same := true
	for _, s := range st.seats {
		if s != st.seats[0] {
			same = false
			break
		}
	}
	if same {
		st.seatbids = append(st.seatbids[:0], openrtb2.SeatBid{Bid: st.bids, Seat: st.seats[0]})
		st.resp.SeatBid = st.seatbids
		return
	}
	st.grouped = st.grouped[:0]
	st.seatbids = st.seatbids[:0]
	for i, s := range st.seats {
		seen := false
		for _, sb := range st.seatbids {
			if sb.Seat == s {
				seen = true
				break
			}
		}
		if seen {
			continue
		}
		start := len(st.grouped)
		for j := i; j < len(st.bids); j++ {
			if st.seats[j] == s {
				st.grouped = append(st.grouped, st.bids[j])
			}
		}
		st.seatbids = append(st.seatbids, openrtb2.SeatBid{Seat: s, Bid: st.grouped[start:len(st.grouped):len(st.grouped)]})
	}
	// st.grouped may have moved while growing: re-slice every seatbid.
	off := 0
	for k := range st.seatbids {
		n := len(st.seatbids[k].Bid)
		st.seatbids[k].Bid = st.grouped[off : off+n]
		off += n
	}
	st.resp.SeatBid = st.seatbids
}

// resizeFor is the image resize service for an imp: none on a secure imp
// when the service's URL is not https (its images would load over http).
func (b *Bidder) resizeFor(secure bool) *creative.ResizeURL {
	if secure && !creative.IsHTTPSURL(b.opts.ImageResizeURL) {
		return nil
	}
	return b.resize
}
