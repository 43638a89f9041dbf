package notice

import (
	"github.com/valyala/fasthttp"

	"github.com/rtbd/rtbd/bidder/spend"
	"github.com/rtbd/rtbd/bidder/token"
	"github.com/rtbd/rtbd/rtb"
)

// Loss notices (GET /loss: Handler.ServeLoss), served with or without
// Options.Spend.
//
// Every bid carries an lurl:
//
//	PublicURL/loss?t=TOKEN&r=${AUCTION_LOSS}&m=${AUCTION_MIN_TO_WIN}
//
// TOKEN is the bid's exchange token (token.AudienceExchange), the one of
// its nurl and burl. The exchange fires it when the bid lost, with r the
// OpenRTB 2.6 loss reason code and m the price that would have won (m
// teaches bid shading: see the package documentation). Answers, counted in
// rtbd_notices_total{kind="loss", outcome}:
//
//	accepted     204; counted in rtbd_loss_total{reason} and, with
//	             Options.Spend, in the campaign's loss counters
//	replay       204, not counted again: this process accepted the bid's
//	             loss notice within Options.ReplayWindow
//	test         204, not counted: the loss of a test bid
//	forged       400: bad signature, malformed token, or the bid's markup token
//	expired      410: the token verified but is past its expiry
//	bad_request  400 (405 for a method other than GET/HEAD): no t
//
// The reason label is rtb.LossReason's: one per code of the specification
// (lost_to_higher_bid for 102, below_auction_floor for 100, ...),
// exchange_specific for 500 and up, and other for anything else: an
// unknown code, none, or the unfilled macro.
//
// # Counted in memory, flushed with the spend
//
// Losses are about ten times the wins, so a loss is never a store write of
// its own: spend.Writer.Count adds one to the campaign's counter for the
// reason (an atomic), and the Writer flushes the counters with the
// campaign's spend (spend.Delta.Counts); the store sums them over the
// fleet. /admin/campaigns shows them (with bids, wins and the win rate).
// Counters not yet flushed are lost by a crash (they are not journaled).
//
// # Replays
//
// A replayed loss notice counts once per process: the bid's nonce is
// remembered in the replay set of /win and /bill (its own kind), for
// between one and two Options.ReplayWindow, bounded by
// Options.ReplayMaxEntries like the other notices. It is not keyed in the
// store, so the same loss notice sent to k bidders of a fleet counts at
// most k times (once per bidder within its window); exchanges fire an lurl
// once, to the host in it, so that is a bound on retries, not the common
// case.

// The loss reasons that teach bid shading: 102 and 100.
var lossHigherBid, lossBelowFloor = rtb.LossReasonOf(102), rtb.LossReasonOf(100)

// ServeLoss is GET /loss.
func (h *Handler) ServeLoss(rc *fasthttp.RequestCtx) {
	h.answer(rc, Loss, h.loss(rc))
}

func (h *Handler) loss(rc *fasthttp.RequestCtx) int {
	ns := h.pool.Get().(*state)
	defer h.pool.Put(ns)
	now := h.o.Now()
	if out, ok := h.read(rc, token.KindLoss, ns, now); !ok {
		return out
	}
	args := rc.QueryArgs()
	tok := &ns.tok
	if tok.Test {
		return outTest
	}
	if !h.replays.firstNotice(Loss, tok, now) {
		return outReplay
	}
	reason := rtb.ParseLossReason(args.Peek("r"))
	h.losses[reason].Inc()
	h.recordLoss(tok, reason, args.Peek("m"), now)
	if w := h.o.Spend; w != nil {
		_ = w.Count(tok.Campaign, spend.CountLosses+int(reason)) // closing: a statistic, not money
	}
	if reason == lossHigherBid || reason == lossBelowFloor {
		h.learn(tok, false, args.Peek("m"), now)
	}
	return outAccepted
}
