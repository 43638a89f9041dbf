package bidder

import (
	"time"
	"unsafe"

	"github.com/rtbd/rtbd/bidder/token"
)

// The replay set keys every notice of a bid by the bid's nonce
// (token.Token.NoticeNonce: the nonce signed into the token, or, for a
// token of a format without one, the nonce derived from its campaign,
// auction, imp and issue time) and the notice's kind: two bids are never
// one, even when an exchange reuses a request id and imp id or two
// exchanges send the same ids, and billing one bid's token never blocks
// another's. The store keys the charge by the same nonce.

// firstNotice records the notice of kind (a notice kind, chargeKey or
// replayWon) for tok's bid and reports whether it was not already
// recorded within the window.
func (r *replaySet) firstNotice(kind int, tok *token.Token, now time.Time) bool {
	nonce := tok.NoticeNonce()
	return r.firstTime(kind, unsafe.String(&nonce[0], len(nonce)), "", now)
}

// forgetNotice removes what firstNotice recorded (its charge failed).
func (r *replaySet) forgetNotice(kind int, tok *token.Token) {
	nonce := tok.NoticeNonce()
	r.forget(kind, unsafe.String(&nonce[0], len(nonce)), "")
}
