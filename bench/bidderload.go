package bench

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// Popularities of the bidder scenario's users.
const (
	PopularityDemo    = "demo"
	PopularityZipf    = "zipf"
	PopularityUniform = "uniform"
)

// popularityUsers are the users the harness writes for a popularity
// (none for demo: the demo's own users).
var popularityUsers = map[string]benchUsers{
	PopularityZipf:    {prefix: "bench-z-", seed: 31},
	PopularityUniform: {prefix: "bench-u-", uniform: true, seed: 32},
}

// popSuffix is a popularity's suffix of target names ("" for demo, so
// that the default runs keep their names).
func popSuffix(pop string) string {
	if pop == PopularityDemo || pop == "" {
		return ""
	}
	return " " + pop
}

// bidShapes are the imp of each weight: the campaign template that wins it.
var bidShapes = map[int]string{
	3:  "banner 320x50 | 300x50 | 728x90 (template light: 3 products)",
	15: "native 1.2 (template medium: 15 products)",
	30: "banner 160x600 (template heavy: 30 products)",
}

// bidWorkload builds OpenRTB 2.6 bid requests from the demo: a random demo
// user, site and device, and the imp of the weight.
type bidWorkload struct {
	users  int
	weight int
	// userPrefix names the users: userPrefix + 1..users. "": "demo-user-".
	userPrefix string
	// each, when set, names every user in turn (1, 2, ..., users, 1, ...)
	// instead of a random one: the warming pass.
	each *atomic.Uint64
}

// newBidWorkload is the bids of weight to the users of popularity pop.
func newBidWorkload(users, weight int, pop string) bidWorkload {
	return bidWorkload{users: users, weight: weight, userPrefix: popularityUsers[pop].prefix}
}

var benchSites = [...]string{
	`{"id":"bench-site-1","name":"Example News","domain":"news.example.com","page":"https://news.example.com/articles/1","cat":["IAB12"],"publisher":{"id":"pub-1","domain":"example.com"}}`,
	`{"id":"bench-site-2","name":"Recipes","domain":"recipes.example.org","page":"https://recipes.example.org/curry","cat":["IAB8"],"publisher":{"id":"pub-2","domain":"example.org"}}`,
	`{"id":"bench-site-3","name":"Gadgets","domain":"gadgets.example.net","page":"https://gadgets.example.net/review/42","cat":["IAB19"],"publisher":{"id":"pub-3","domain":"example.net"}}`,
}

var benchDevices = [...]string{
	`{"ua":"Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Safari/605.1.15","ip":"203.0.113.7","devicetype":2,"os":"macOS","language":"en","geo":{"country":"USA","region":"CA","type":2}}`,
	`{"ua":"Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1","ip":"198.51.100.23","devicetype":4,"os":"iOS","language":"ja","geo":{"country":"JPN","type":2}}`,
	`{"ua":"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36","ip":"192.0.2.44","devicetype":2,"os":"Windows","language":"en","geo":{"country":"GBR","type":2}}`,
	`{"ua":"Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Mobile Safari/537.36","ip":"198.51.100.99","devicetype":4,"os":"Android","language":"de","geo":{"country":"DEU","type":2}}`,
}

var lightSizes = [...][2]int{{320, 50}, {300, 50}, {728, 90}}

// nativeRequest is a Native 1.2 request (title, main image, price, sponsor),
// JSON-escaped for imp.native.request.
const nativeRequest = `{\"ver\":\"1.2\",\"assets\":[{\"id\":1,\"required\":1,\"title\":{\"len\":25}},{\"id\":2,\"required\":1,\"img\":{\"type\":3,\"wmin\":100,\"hmin\":100}},{\"id\":3,\"data\":{\"type\":6}},{\"id\":4,\"required\":1,\"data\":{\"type\":1}}]}`

func (b bidWorkload) body(w *Worker, dst []byte) []byte {
	user := 1 + w.Rand.IntN(b.users)
	if b.each != nil {
		user = 1 + int((b.each.Add(1)-1)%uint64(b.users))
	}
	dst = fmt.Appendf(dst, `{"id":"bench-%d-%d","imp":[{"id":"1",`, w.ID, w.Seq)
	switch b.weight {
	case 3:
		s := lightSizes[w.Rand.IntN(len(lightSizes))]
		dst = fmt.Appendf(dst, `"banner":{"w":%d,"h":%d,"format":[{"w":%d,"h":%d}]}`, s[0], s[1], s[0], s[1])
	case 15:
		dst = append(dst, `"native":{"request":"`+nativeRequest+`","ver":"1.2"}`...)
	default:
		dst = append(dst, `"banner":{"w":160,"h":600,"format":[{"w":160,"h":600}]}`...)
	}
	dst = append(dst, `,"bidfloor":0.01,"bidfloorcur":"USD","secure":1}],"site":`...)
	dst = append(dst, benchSites[w.Rand.IntN(len(benchSites))]...)
	dst = append(dst, `,"device":`...)
	dst = append(dst, benchDevices[w.Rand.IntN(len(benchDevices))]...)
	prefix := cmp.Or(b.userPrefix, "demo-user-")
	dst = fmt.Appendf(dst, `,"user":{"id":"%s%d","buyeruid":"%s%d"},"at":1,"tmax":100,"cur":["USD"],"regs":{"coppa":0,"gdpr":0}}`, prefix, user, prefix, user)
	return dst
}

// urlRing keeps the last nurlRingSize URLs added (of seen in all) for a
// load replaying them. Safe for concurrent use.
type urlRing struct {
	mu   sync.Mutex
	buf  [][]byte
	seen int64
}

const nurlRingSize = 4096

// add keeps a copy of u, in place of the oldest when the ring is full.
func (r *urlRing) add(u []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	i := int(r.seen % nurlRingSize)
	r.seen++
	if i == len(r.buf) {
		r.buf = append(r.buf, nil)
	}
	r.buf[i] = append(r.buf[i][:0], u...)
}

// pick appends a random recent URL to dst; false when none was added.
func (r *urlRing) pick(rng *rand.Rand, dst []byte) ([]byte, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.buf) == 0 {
		return dst, false
	}
	return append(dst, r.buf[rng.IntN(len(r.buf))]...), true
}

// nurlRing keeps the path and query of recent bids' win notice URLs
// (nurl), price macro filled, for the win notice load.
type nurlRing struct{ urlRing }

var (
	nurlKey    = []byte(`"nurl":"`)
	burlKey    = []byte(`"burl":"`)
	priceMacro = []byte("${AUCTION_PRICE}")
)

// noticePrice is the clearing price every replayed notice reports (CPM):
// the floor of the harness's requests, so it is never above a bid (a
// first-price bid is shaded, but never below the floor).
const noticePrice = "0.01"

// harvest copies the nurl of a bid response body, if any.
func (r *nurlRing) harvest(body []byte) {
	if u, ok := noticePath(body, nurlKey, "/win?"); ok {
		r.add(u)
	}
}

// noticePath is the path and query of the notice URL after key (nurlKey,
// burlKey) in a bid response, starting at path, unescaped, with the price
// macro filled (noticePrice).
func noticePath(body, key []byte, path string) ([]byte, bool) {
	_, rest, ok := bytes.Cut(body, key)
	u, _, ok2 := bytes.Cut(rest, []byte(`"`))
	k := bytes.Index(u, []byte(path))
	if !ok || !ok2 || k < 0 {
		return nil, false
	}
	u = bytes.ReplaceAll(u[k:], []byte(`\u0026`), []byte("&"))
	return bytes.ReplaceAll(u, priceMacro, []byte(noticePrice)), true
}

// classifyWin: a 204 is OK, unless its X-Rtbd-Notice says "unhandled" (a
// bidder without a spend writer): NoBid, never a success. Other answers
// as ClassifyHTTPStatus (404 without /win, 400 for a refused token).
func classifyWin(status int, outcome []byte) Outcome {
	switch {
	case status == 204 && string(outcome) == "unhandled":
		return NoBid
	case status == 204:
		return OK
	}
	return ClassifyHTTPStatus(status, nil)
}

// runOverload finds each topology's highest bid rate holding the
// objective at the middle weight with the users of popularity pop, then
// offers it twice that rate. The near cache's lookups over the search go
// into near under the search's best row.
func runOverload(ctx context.Context, o BidderOptions, ts []*topo, pop string, rep *Report, entries *[]TableEntry, near map[string]NearStats, logf func(string, ...any)) error {
	w := o.Weights[len(o.Weights)/2]
	wl := newBidWorkload(o.Users, w, pop)
	for _, t := range ts {
		name := fmt.Sprintf("%s/%d %s bids only", t.name, w, pop)
		near0 := t.nearStats()
		logf("overload %s: searching the highest rate with p99 <= %v, < 0.1%% answers past tmax %v and < 1%% no-bids (a shedding bidder keeps its latency)",
			name, o.Load.P99, o.Load.Tmax)
		lo := Options{MaxInFlight: o.Load.MaxInFlight, Timeout: o.Load.Timeout, Tmax: o.Load.Tmax, Seed: o.Load.Seed, Watch: t.watch}
		s, err := FindMaxRate(ctx, bidTarget(name, t.addr, wl, nil, max(o.Load.MaxInFlight, 64)), FindMaxRateOptions{
			Objective: Objective{P99: o.Load.P99, MaxMissRatio: 0.001, MaxNoBidRatio: 0.01}, StartRate: max(o.Load.Rate/4, 25), MaxRate: o.Load.MaxRate,
			StepDuration: min(o.Load.Duration, 5*time.Second), StepWarmup: min(o.Load.Warmup, time.Second), Cooldown: time.Second, Precision: 0.1, Confirm: 1,
			MaxSteps: 30, Load: lo, Logf: logf,
		})
		if err != nil && !errors.Is(err, ErrNoPassingRate) {
			return fmt.Errorf("bench: overload %s: %w", name, err)
		}
		rep.Searches = append(rep.Searches, s)
		if ns := t.nearStats().Sub(near0); ns.Found {
			near[name+" max"] = ns
		}
		if s.MaxRate == 0 {
			msg := fmt.Sprintf("overload %s NOT RUN: not even the search's start rate held the objective (see the search)", name)
			rep.Notes = append(rep.Notes, msg)
			logf("  %s", msg)
			continue
		}
		if s.Best != nil {
			s.Best.Target = name + " max"
			rep.Results = append(rep.Results, s.Best)
			*entries = append(*entries, TableEntry{Result: s.Best, Group: "overload"})
		}
		rate := 2 * s.MaxRate
		logf("overload %s: highest sustainable %s req/s; offering %s req/s for %v", name, fmtRate(s.MaxRate), fmtRate(rate), o.Load.Duration)
		lo.Rate, lo.Duration, lo.Warmup = rate, o.Load.Duration, min(o.Load.Warmup, time.Second)
		r, err := Run(ctx, bidTarget(name+" 2x", t.addr, wl, nil, max(o.Load.MaxInFlight, 64)), lo)
		if r == nil {
			return err
		}
		bidRate := bidsPerSec(r)
		within := r.DeadlineMisses == 0 && r.Errors.Total == 0
		r.Notes = append(r.Notes, fmt.Sprintf("overload: offered %s req/s = 2 x the highest sustainable %s req/s (%s); answers past tmax %d, errors %d (%+v): every request answered within tmax: %v",
			fmtRate(rate), fmtRate(s.MaxRate), s.Objective, r.DeadlineMisses, r.Errors.Total, r.Errors, within),
			fmt.Sprintf("overload: successful bids %s/s = %.0f%% of the highest sustainable rate (acceptance: >= 80%%); no-bids %d (shed or past deadline, nbr 507/508)",
				fmtRate(bidRate), 100*bidRate/max(s.MaxRate, 1e-9), r.NoBids))
		rep.Results = append(rep.Results, r)
		*entries = append(*entries, TableEntry{Result: r, Group: "overload", Baseline: name + " max"})
		logf("  %s", r.Notes[len(r.Notes)-2])
		logf("  %s", r.Notes[len(r.Notes)-1])
		if err != nil {
			return err
		}
	}
	return nil
}
