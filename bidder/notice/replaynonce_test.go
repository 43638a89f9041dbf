package notice

import (
	"testing"
	"time"

	"github.com/rtbd/rtbd/bidder/token"
)

func TestReplaySet(t *testing.T) {
	r := newReplaySet(time.Minute, 32*2*16)
	now := time.Unix(1_700_000_000, 0)
	if !r.firstTime(Bill, "a", "1", now) || r.firstTime(Bill, "a", "1", now) {
		t.Fatal("first/second")
	}
	if !r.firstTime(Win, "a", "1", now) || !r.firstTime(Bill, "a", "2", now) || !r.firstTime(Bill, "a1", "", now) {
		t.Fatal("other kind, imp, or split of the same bytes seen as a replay")
	}
	// Remembered for at least one window, forgotten after two.
	if r.firstTime(Bill, "a", "1", now.Add(90*time.Second)) {
		t.Fatal("forgotten within the window")
	}
	if !r.firstTime(Bill, "a", "1", now.Add(5*time.Minute)) {
		t.Fatal("remembered after two windows")
	}
	r.forget(Bill, "a", "1")
	if !r.firstTime(Bill, "a", "1", now.Add(5*time.Minute)) {
		t.Fatal("forget")
	}
}

// TestReplayKeyDerivedNonce: tokens of a format without a nonce are keyed
// by the nonce derived from their campaign, auction, imp and issue time:
// two such bids with the same ids issued at different times are two bids,
// the same token twice is a replay.
func TestReplayKeyDerivedNonce(t *testing.T) {
	r := newReplaySet(time.Minute, 1024)
	now := time.Unix(1_700_000_000, 0)
	old1 := token.Token{Campaign: "c", Auction: "a", Imp: "1", Issued: now}
	old2 := old1
	old2.Issued = now.Add(time.Second)
	withNonce := old1
	withNonce.Nonce = [16]byte{1}
	if !r.firstNotice(Bill, &old1, now) || r.firstNotice(Bill, &old1, now) {
		t.Fatal("first/replay of a token without a nonce")
	}
	if !r.firstNotice(Bill, &old2, now) || !r.firstNotice(Bill, &withNonce, now) {
		t.Fatal("another bid with the same auction and imp ids seen as a replay")
	}
	if !r.firstNotice(Win, &old1, now) {
		t.Fatal("another kind of the same bid seen as a replay")
	}
	r.forgetNotice(Bill, &old1)
	if !r.firstNotice(Bill, &old1, now) {
		t.Fatal("forgetNotice")
	}
}
