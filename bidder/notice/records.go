package notice

import (
	"sync"
	"time"

	"github.com/rtbd/rtbd/bidder/exchange"
	"github.com/rtbd/rtbd/bidder/spend"
	"github.com/rtbd/rtbd/bidder/token"
	"github.com/rtbd/rtbd/records"
	"github.com/rtbd/rtbd/rtb"
	"github.com/rtbd/rtbd/rtb/money"
)

// The records of notices (package records), with Options.Records set:
// win for each accepted /win (not a replay), at its clearing price; imp
// for each accepted /imp; loss for each accepted /loss, with its reason
// and m; charge for the notice that charged the impression (whichever of
// /win, /bill, /imp the billing mode says), written into the journal's
// export log with the notice itself (appendCharge), so it is durable
// exactly when the notice is acknowledged. The notices of test bids make
// no record. value_micros is the bid's value before bid shading, from the
// token (0 for tokens signed before tokens carried it).

// Record is the record of a notice of tok's bid (also of a click on it)
// at price (CPM, micros of tok.Currency).
func Record(k records.Kind, tok *token.Token, price int64, now time.Time) records.Record {
	x := tok.Exchange
	if x == "" {
		x = exchange.Default
	}
	return records.Record{Kind: k, Time: now, Nonce: tok.NoticeNonce(), RequestID: tok.Auction, ImpID: tok.Imp,
		Exchange: x, CampaignID: tok.Campaign, PriceMicros: price, ValueMicros: tok.ValueMicros, Currency: tok.Currency, Test: tok.Test}
}

// recordNotice records an accepted /win or /imp notice (a /bill is
// recorded as the charge it makes).
func (h *Handler) recordNotice(kind Kind, tok *token.Token, price int64, now time.Time) {
	r := h.o.Records
	var k records.Kind
	switch kind {
	case Win:
		k = records.KindWin
	case Imp:
		k = records.KindImp
	}
	if r == nil || k == 0 {
		return
	}
	rec := Record(k, tok, price, now)
	r.Put(&rec)
}

// recordLoss records an accepted /loss notice: its reason and m (the
// price that would have won, CPM in the bid's currency; 0 when absent or
// not a price).
func (h *Handler) recordLoss(tok *token.Token, reason rtb.LossReason, m []byte, now time.Time) {
	r := h.o.Records
	if r == nil {
		return
	}
	rec := Record(records.KindLoss, tok, tok.PriceMicros, now)
	rec.Reason = reason.String()
	if v, err := money.Parse(m); err == nil {
		rec.MMicros = v
	}
	r.Put(&rec)
}

// exportJournal is a Journal with an export log (*journal.Journal).
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
func (h *Handler) appendCharge(j Journal, tok *token.Token, n *spend.Notice, price int64) error {
	ej, ok := j.(exportJournal)
	if !ok || h.o.Records == nil {
		return j.Append(tok.Campaign, n)
	}
	rec := Record(records.KindCharge, tok, price, n.At)
	rec.Nonce, rec.SpendMicros, rec.Instance = records.Nonce(n.Nonce), n.Micros, h.o.Records.Instance()
	bp := chargeBufs.Get().(*[]byte)
	*bp = rec.AppendBinary((*bp)[:0])
	err := ej.AppendExport(tok.Campaign, n, *bp)
	chargeBufs.Put(bp)
	return err
}

// dropCharge removes a journaled notice the spend Writer then refused (it
// was not acknowledged): neither replayed nor exported.
func (h *Handler) dropCharge(seq uint64) {
	if ej, ok := h.o.Journal.(exportJournal); ok {
		ej.Drop([]uint64{seq})
		return
	}
	h.o.Journal.Confirm([]uint64{seq})
}
