package bidder

import (
	"strconv"
	"time"

	"github.com/prebid/openrtb/v20/openrtb2"

	"github.com/rtbd/rtbd/bidder/notice"
	"github.com/rtbd/rtbd/bidder/token"
	"github.com/rtbd/rtbd/catalog/catalogpb"
	"github.com/rtbd/rtbd/records"
	"github.com/rtbd/rtbd/rtb"
)

// Log-level records (package records), with Options.Records set:
//
//	bid     one per bid made (as counted in spend.CountBids), in tryCands
//	nobid   one in records.nobid_sample no-bid answers, with the reason
//	win, imp, loss, charge
//	        the accepted notices, and the charge of the notice that
//	        charged the impression, durable with the notice (package
//	        notice)
//	click   each followed click, with the product clicked
//	view    each recorded product view (/event), with the user id: a view
//	        is only recorded when the privacy decision allows it
//
// A record is built on the stack from the request or the token and
// copied by records.Recorder.Put into each sink's bounded buffer: no
// allocation, no waiting on a sink. Test requests' bids carry test=true;
// the notices of test bids make no record (they are not counted either).
// value_micros is the bid's value before bid shading (the bid's own
// price when it was not shaded), from the candidate or the notice's token
// (0 for tokens signed before tokens carried it).

// deviceTypeNames are AdCOM 1.0 device types.
var deviceTypeNames = [...]string{"", "mobile_tablet", "pc", "connected_tv", "phone", "tablet", "connected_device", "set_top_box", "ooh"}

// requestContext fills the request's publisher, domain or bundle, country
// and device type into rec.
func requestContext(rec *records.Record, req *openrtb2.BidRequest) {
	switch {
	case req.Site != nil:
		rec.DomainOrBundle = req.Site.Domain
		if req.Site.Publisher != nil {
			rec.Publisher = req.Site.Publisher.ID
		}
	case req.App != nil:
		rec.DomainOrBundle = req.App.Bundle
		if req.App.Publisher != nil {
			rec.Publisher = req.App.Publisher.ID
		}
	}
	if d := req.Device; d != nil {
		if d.Geo != nil {
			rec.Country = d.Geo.Country
		}
		if t := int(d.DeviceType); t > 0 && t < len(deviceTypeNames) {
			rec.DeviceType = deviceTypeNames[t]
		}
	}
}

// maxRecordProducts bounds the product ids a bid record lists.
const maxRecordProducts = 64

// recordBid records the bid just made on imp i for cd.
func (b *Bidder) recordBid(st *reqState, i int, cd *candidate, products []*catalogpb.Product) {
	r := b.opts.Records
	if r == nil {
		return
	}
	req := &st.req
	rec := records.Record{Kind: records.KindBid, Time: st.now, Nonce: st.nonce, RequestID: req.ID, ImpID: req.Imp[i].ID,
		Exchange: b.exchanges.List[st.exchange].Name, CampaignID: cd.c.ID, PriceMicros: cd.price, ValueMicros: cd.value, Currency: st.a.cur,
		Test: req.Test == 1}
	requestContext(&rec, req)
	if cd.kind == mediaBanner {
		a := len(st.arena)
		st.arena = strconv.AppendInt(st.arena, cd.w, 10)
		st.arena = append(st.arena, 'x')
		st.arena = strconv.AppendInt(st.arena, cd.h, 10)
		rec.Format = str(st.arena[a:])
	} else {
		rec.Format = cd.kind.String()
	}
	var ids [maxRecordProducts]int64
	n := 0
	for _, p := range products {
		if p != nil && n < len(ids) {
			ids[n] = p.ProductId
			n++
		}
	}
	rec.Products = ids[:n]
	r.Put(&rec)
}

// recordNoBid records a sampled no-bid answer.
func (b *Bidder) recordNoBid(st *reqState, nbr rtb.NoBidReason) {
	r := b.opts.Records
	if r == nil || !r.SampleNoBid() {
		return
	}
	req := &st.req
	rec := records.Record{Kind: records.KindNoBid, Time: b.opts.Now(), Nonce: r.NewNonce(), RequestID: req.ID,
		Exchange: b.exchanges.List[st.exchange].Name, Reason: nbr.String(), Test: req.Test == 1}
	requestContext(&rec, req)
	r.Put(&rec)
}

// recordClick records a followed click on product pid.
func (b *Bidder) recordClick(tok *token.Token, pid int64, now time.Time) {
	r := b.opts.Records
	if r == nil {
		return
	}
	rec := notice.Record(records.KindClick, tok, tok.PriceMicros, now)
	rec.GroupID, rec.ProductID = tok.Group, pid
	r.Put(&rec)
}

// recordView records a product view of uid (recorded in its profile: the
// privacy decision allowed it).
func (b *Bidder) recordView(uid string, group, pid int64, now time.Time) {
	r := b.opts.Records
	if r == nil {
		return
	}
	rec := records.Record{Kind: records.KindView, Time: now, Nonce: r.NewNonce(), UserID: uid, GroupID: group, ProductID: pid}
	r.Put(&rec)
}
