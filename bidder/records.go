package bidder

import (
	"strconv"
	"sync"
	"time"

	"github.com/prebid/openrtb/v20/openrtb2"

	"github.com/rtbd/rtbd/bidder/spend"
	"github.com/rtbd/rtbd/bidder/token"
	"github.com/rtbd/rtbd/catalog/catalogpb"
	"github.com/rtbd/rtbd/records"
	"github.com/rtbd/rtbd/rtb"
	"github.com/rtbd/rtbd/rtb/money"
)

// Log-level records (package records), with Options.Records set:
//
//	bid     one per bid made (as counted in spend.CountBids), in tryCands
//	nobid   one in records.nobid_sample no-bid answers, with the reason
//	win     each accepted /win (not a replay), at its clearing price
//	imp     each accepted /imp
//	loss    each accepted /loss, with its reason and m
//	charge  the notice that charged the impression (whichever of /win,
//	        /bill, /imp the billing mode says): written into the journal's
//	        export log with the notice itself (appendCharge), so it is
//	        durable exactly when the notice is acknowledged
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
		Exchange: b.exchanges.list[st.exchange].Name, CampaignID: cd.c.ID, PriceMicros: cd.price, ValueMicros: cd.value, Currency: st.a.cur,
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
		Exchange: b.exchanges.list[st.exchange].Name, Reason: nbr.String(), Test: req.Test == 1}
	requestContext(&rec, req)
	r.Put(&rec)
}

// noticeRecord is the record of a notice of tok's bid at price (CPM,
// micros of tok.Currency).
func noticeRecord(k records.Kind, tok *token.Token, price int64, now time.Time) records.Record {
	x := tok.Exchange
	if x == "" {
		x = DefaultExchange
	}
	return records.Record{Kind: k, Time: now, Nonce: tok.NoticeNonce(), RequestID: tok.Auction, ImpID: tok.Imp,
		Exchange: x, CampaignID: tok.Campaign, PriceMicros: price, ValueMicros: tok.ValueMicros, Currency: tok.Currency, Test: tok.Test}
}

// recordNotice records an accepted /win or /imp notice (a /bill is
// recorded as the charge it makes).
func (b *Bidder) recordNotice(kind int, tok *token.Token, price int64, now time.Time) {
	r := b.opts.Records
	var k records.Kind
	switch kind {
	case noticeWin:
		k = records.KindWin
	case noticeImp:
		k = records.KindImp
	}
	if r == nil || k == 0 {
		return
	}
	rec := noticeRecord(k, tok, price, now)
	r.Put(&rec)
}

// recordLoss records an accepted /loss notice: its reason and m (the
// price that would have won, CPM in the bid's currency; 0 when absent or
// not a price).
func (b *Bidder) recordLoss(tok *token.Token, reason rtb.LossReason, m []byte, now time.Time) {
	r := b.opts.Records
	if r == nil {
		return
	}
	rec := noticeRecord(records.KindLoss, tok, tok.PriceMicros, now)
	rec.Reason = reason.String()
	if v, err := money.Parse(m); err == nil {
		rec.MMicros = v
	}
	r.Put(&rec)
}

// recordClick records a followed click on product pid.
func (b *Bidder) recordClick(tok *token.Token, pid int64, now time.Time) {
	r := b.opts.Records
	if r == nil {
		return
	}
	rec := noticeRecord(records.KindClick, tok, tok.PriceMicros, now)
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

// exportJournal is a NoticeJournal with an export log
// (*journal.Journal).
type exportJournal interface {
	AppendExport(campaign string, n *spend.Notice, rec []byte) error
	Drop(seqs []uint64)
}

// chargeBufs are the scratch buffers of charge records' binary form.
var chargeBufs = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// appendCharge writes the charging notice n of tok's bid (clearing price
// price, CPM in tok.Currency; n.Micros is the charge in the campaign's
// currency) into the journal, with its charge record when records are on:
// one atomic, fsynced write.
func (b *Bidder) appendCharge(j NoticeJournal, tok *token.Token, n *spend.Notice, price int64) error {
	ej, ok := j.(exportJournal)
	if !ok || b.opts.Records == nil {
		return j.Append(tok.Campaign, n)
	}
	rec := noticeRecord(records.KindCharge, tok, price, n.At)
	rec.Nonce, rec.SpendMicros, rec.Instance = records.Nonce(n.Nonce), n.Micros, b.opts.Records.Instance()
	bp := chargeBufs.Get().(*[]byte)
	*bp = rec.AppendBinary((*bp)[:0])
	err := ej.AppendExport(tok.Campaign, n, *bp)
	chargeBufs.Put(bp)
	return err
}

// dropCharge removes a journaled notice the spend Writer then refused (it
// was not acknowledged): neither replayed nor exported.
func (b *Bidder) dropCharge(seq uint64) {
	if ej, ok := b.opts.Journal.(exportJournal); ok {
		ej.Drop([]uint64{seq})
		return
	}
	b.opts.Journal.Confirm([]uint64{seq})
}
