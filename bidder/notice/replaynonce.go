package notice

import (
	"hash/maphash"
	"sync"
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
func (r *replaySet) firstNotice(kind Kind, tok *token.Token, now time.Time) bool {
	nonce := tok.NoticeNonce()
	return r.firstTime(kind, unsafe.String(&nonce[0], len(nonce)), "", now)
}

// forgetNotice removes what firstNotice recorded (its charge failed).
func (r *replaySet) forgetNotice(kind Kind, tok *token.Token) {
	nonce := tok.NoticeNonce()
	r.forget(kind, unsafe.String(&nonce[0], len(nonce)), "")
}

// replaySet remembers accepted notices (see the package documentation):
// sharded, two generations per shard, 128-bit keys.
type replaySet struct {
	seed1, seed2 maphash.Seed
	window       time.Duration
	maxPerShard  int
	shards       [16]replayShard
}

type replayKey [2]uint64

type replayShard struct {
	mu        sync.Mutex
	cur, prev map[replayKey]struct{}
	start     time.Time // of cur
}

func newReplaySet(window time.Duration, maxEntries int) *replaySet {
	r := &replaySet{seed1: maphash.MakeSeed(), seed2: maphash.MakeSeed(), window: window,
		maxPerShard: max(1, maxEntries/2/16)}
	for i := range r.shards {
		r.shards[i].cur = make(map[replayKey]struct{})
	}
	return r
}

func (r *replaySet) key(kind Kind, auction, imp string) replayKey {
	var k replayKey
	for i, seed := range []maphash.Seed{r.seed1, r.seed2} {
		var h maphash.Hash
		h.SetSeed(seed)
		h.WriteByte(byte(kind))
		h.WriteString(auction)
		h.WriteByte(0)
		h.WriteString(imp)
		k[i] = h.Sum64()
	}
	return k
}

// firstTime records the notice and reports whether it was not already
// recorded within the window.
func (r *replaySet) firstTime(kind Kind, auction, imp string, now time.Time) bool {
	k := r.key(kind, auction, imp)
	sh := &r.shards[k[0]%uint64(len(r.shards))]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.start.IsZero() {
		sh.start = now
	}
	if now.Sub(sh.start) >= r.window || len(sh.cur) >= r.maxPerShard {
		if now.Sub(sh.start) >= 2*r.window {
			sh.prev = nil // both generations are older than a window
		} else {
			sh.prev = sh.cur
		}
		sh.cur = make(map[replayKey]struct{}, len(sh.prev))
		sh.start = now
	}
	if _, ok := sh.cur[k]; ok {
		return false
	}
	if _, ok := sh.prev[k]; ok {
		return false
	}
	sh.cur[k] = struct{}{}
	return true
}

// forget removes a notice recorded by firstTime (its charge failed).
func (r *replaySet) forget(kind Kind, auction, imp string) {
	k := r.key(kind, auction, imp)
	sh := &r.shards[k[0]%uint64(len(r.shards))]
	sh.mu.Lock()
	delete(sh.cur, k)
	delete(sh.prev, k)
	sh.mu.Unlock()
}
