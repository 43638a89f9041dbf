package spend

import (
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// Writer absorbs accepted notices in memory and flushes them to a Store in
// batches (talk 2's message buffer writer): per campaign and day, the
// notices with the spend, impressions and per (user, cap window)
// impression counts they add, which the store charges once per notice. A campaign is flushed when its unflushed part passes a threshold
// (Options.ThresholdImps, ThresholdMicros, BudgetFraction) or when the timer
// fires (Options.FlushInterval); at most Options.Flushers Store.Flush calls
// run at once, fed by a buffered channel. A failed flush keeps its deltas,
// unchanged, and retries them with exponential backoff: nothing accepted is
// lost while the process lives, and nothing is charged twice. Close
// flushes everything.
//
// Every flush returns the fleet-wide totals, which the Writer keeps as the
// campaign's last known fleet state; campaigns this bidder did not flush
// within an interval have their totals read (Store.Read) by a refresh loop.
// Budgets uses both.
//
// All methods are safe for concurrent use.
type Writer struct {
	store Store
	opts  Options
	log   *zap.Logger
	m     *metrics

	seq atomic.Uint64

	// Nonces of Add's notices: a random per-Writer prefix and a counter.
	noncePrefix [8]byte
	nonceSeq    atomic.Uint64

	campsMu sync.Mutex // serialises inserts into camps (copy on write)
	camps   atomic.Pointer[map[string]*campState]

	queue       chan *campState
	outstanding atomic.Int64 // campaigns queued or being flushed
	active      atomic.Int64 // Adds in progress
	closed      atomic.Bool
	stop        chan struct{}
	loops       sync.WaitGroup // timer and refresh loops
	workers     sync.WaitGroup
	closeOnce   sync.Once
	closeErr    error

	randMu sync.Mutex
	rnd    *rand.Rand // jitter of backoff

	// base parents every store call; Close cancels it when its own context
	// ends, so queued flushes give up instead of overrunning Close.
	base       context.Context
	cancelBase context.CancelFunc
}

// campState is one campaign's buffer, flush state and budget view.
type campState struct {
	id     string
	set    atomic.Pointer[CampaignBudget] // nil: unknown settings (UTC, no frequency cap)
	active atomic.Bool                    // in the latest SetCampaigns list or seen by Check: refreshed
	mask   uint32
	shards []shard
	rr     atomic.Uint32 // shard for Adds without a user

	// Budget view: accepted and not yet confirmed by the store.
	mu        sync.Mutex // serialises day rotation
	day       atomic.Pointer[dayCounter]
	unflTotal atomic.Int64 // micros, all days
	fleet     atomic.Pointer[fleetView]

	// Threshold trigger: added since the last drain (may dip below 0 briefly).
	pendMicros, pendImps atomic.Int64

	queued   atomic.Bool // in the queue
	flushing atomic.Bool // owned by one flusher
	retryAt  atomic.Int64
	hasRetry atomic.Bool
	// Guarded by flushing.
	retry    *campBatch
	failures int
	lastSeq  int64 // Delta.Seq of the latest batch sealed

	exp exposure // this bidder's outstanding bids (Budgets.Bid)

	counts campCounts // outcome counters (Writer.Count)
}

// dayCounter is the local unconfirmed spend of one day (the campaign's
// latest day seen).
type dayCounter struct {
	day          int32 // yyyymmdd
	micros, imps atomic.Int64
}

// fleetView is the last fleet state the store returned for a campaign.
type fleetView struct {
	day                    int32
	dayMicros, dayImps     int64
	totalMicros, totalImps int64
	at                     int64 // unix nanos, Options.Now
}

// shard holds the accepted notices not yet drained whose user hashes to
// it, and those users' frequency entries.
type shard struct {
	mu    sync.Mutex
	notes []pendNote
	freq  map[freqKey]*freqEntry
	_     [32]byte // keep neighbouring shards' mutexes off one cache line
}

// pendNote is one accepted notice waiting for a flush. n.User is the
// frequency entry's copy of the user id, or empty when the notice counts
// no frequency (e nil).
type pendNote struct {
	n   Notice
	day int32
	e   *freqEntry
	sh  *shard
}

type freqKey struct {
	user   string
	window int64 // unix seconds
}

// freqEntry is one user's count in one window of one campaign. Guarded by
// its shard's mutex.
type freqEntry struct {
	key      freqKey
	end      int64 // window end, unix seconds
	expires  int64 // store expiry, unix seconds
	pending  int64 // not sent
	inflight int64 // sent, not confirmed (includes a failed batch waiting for its retry)
	fleet    int64 // the store's count after this bidder's last confirmed flush
}

// campBatch is what one campaign contributes to one Flush call: its
// deltas (at most one per day, or more when a day has more than
// MaxDeltaUsers notices), all with one Delta.Seq. A failed batch is kept
// and retried as it is (same ids, same content), and a campaign has at
// most one batch in the store's hands at a time.
type campBatch struct {
	cs     *campState
	deltas []Delta
	days   []int32
	refs   [][]freqRef
	capped bool // the campaign had more notices than the batch took
}

// notices is how many notices b carries.
func (b *campBatch) notices() int {
	n := 0
	for i := range b.deltas {
		n += len(b.deltas[i].Notices)
	}
	return n
}

type freqRef struct {
	e  *freqEntry
	sh *shard
	n  int64
}

// NewWriter starts a Writer on store: its flusher goroutines, its timer and
// its fleet refresh loop. Call Close to flush and stop them.
func NewWriter(store Store, opts Options) (*Writer, error) {
	if store == nil {
		return nil, fmt.Errorf("%w: nil store", ErrInvalid)
	}
	if err := opts.ensureDefaults(); err != nil {
		return nil, err
	}
	w := &Writer{
		store: store,
		opts:  opts,
		log:   opts.Logger,
		queue: make(chan *campState, opts.QueueSize),
		stop:  make(chan struct{}),
		rnd:   rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0x5eed)),
	}
	if _, err := crand.Read(w.noncePrefix[:]); err != nil {
		return nil, fmt.Errorf("spend: nonce prefix: %w", err)
	}
	w.base, w.cancelBase = context.WithCancel(context.Background())
	empty := map[string]*campState{}
	w.camps.Store(&empty)
	w.m = newMetrics(opts.Registerer, w)
	for range opts.Flushers {
		w.workers.Add(1)
		go w.worker()
	}
	w.loops.Add(2)
	go w.timerLoop()
	go w.refreshLoop()
	return w, nil
}

// Options returns the options in force (defaults applied).
func (w *Writer) Options() Options { return w.opts }

// Add records one accepted win (or billing) notice without an idempotency
// key of its own: micros of spend for campaignID (in the campaign's
// currency) and, when userID is not empty and the campaign has a frequency
// cap, one impression for userID. at is when the impression counts
// (normally time.Now()): it picks the campaign's day, in its time zone (see
// SetCampaigns; UTC for a campaign never registered), and the frequency
// window. It is AddNotice with a nonce drawn by the Writer (unique per
// Writer and call), so a retried flush still charges it once, but a replay
// of the same notice is not recognised: callers that have a notice's key
// (the notice handlers, from the token's nonce) use AddNotice.
//
// Add takes no store round trip and allocates only the first time a (user,
// campaign, window) is seen; it copies the strings it keeps. It returns
// ErrClosed once Close has begun, and an error wrapping ErrInvalid for an
// empty or too long id or negative micros; nothing is recorded then.
func (w *Writer) Add(campaignID, userID string, micros int64, at time.Time) error {
	n := Notice{Kind: NoticeCharge, User: userID, Micros: micros, At: at}
	binary.BigEndian.PutUint64(n.Nonce[:8], binary.BigEndian.Uint64(w.noncePrefix[:]))
	binary.BigEndian.PutUint64(n.Nonce[8:], w.nonceSeq.Add(1))
	return w.addNotice(campaignID, &n)
}

// AddNotice records one accepted notice of campaignID, to be charged once
// by the store whatever the retries, replays and restarts: n.Micros of
// spend and, when n.User is not empty and the campaign has a frequency cap,
// one impression for n.User (at n.At, as Add). The notice is kept until
// the store has it; then its non-zero Seq is handed to Options.Confirmed.
// An Expires earlier than MinNoticeTTL from now is raised to it, so the
// key outlives the Writer's retries of a short outage.
//
// Like Add it takes no store round trip, allocates only the first time a
// (user, campaign, window) is seen and copies the strings it keeps. It
// returns ErrClosed once Close has begun and an error wrapping ErrInvalid
// for ids or amounts Add refuses, a zero nonce or kind; nothing is
// recorded then.
func (w *Writer) AddNotice(campaignID string, n *Notice) error {
	if n.Nonce == (Nonce{}) || n.Kind == 0 {
		w.m.addsRejected.Inc()
		return fmt.Errorf("%w: add notice: campaign %q: zero nonce or kind", ErrInvalid, campaignID)
	}
	return w.addNotice(campaignID, n)
}

func (w *Writer) addNotice(campaignID string, n *Notice) error {
	w.active.Add(1)
	defer w.active.Add(-1)
	if w.closed.Load() {
		w.m.addsRejected.Inc()
		return ErrClosed
	}
	userID, micros, at := n.User, n.Micros, n.At
	if micros < 0 || !ValidID(campaignID) || (userID != "" && !ValidID(userID)) {
		w.m.addsRejected.Inc()
		return fmt.Errorf("%w: add: campaign %q, user %q, micros %d", ErrInvalid, campaignID, userID, micros)
	}
	cs := w.campaign(campaignID)
	set := cs.set.Load()
	loc := time.UTC
	var period time.Duration
	if set != nil {
		loc = set.location()
		if set.FreqCap > 0 {
			period = set.FreqPeriod
		}
	}
	day := dayOf(at, loc)

	// Budget view first, so it never shows less than the exact buffers.
	cs.unflTotal.Add(micros)
	if dc := cs.dayCounter(day); dc != nil {
		dc.micros.Add(micros)
		dc.imps.Add(1)
	}

	var sh *shard
	if userID != "" {
		sh = &cs.shards[hashString(userID)&cs.mask]
	} else {
		sh = &cs.shards[cs.rr.Add(1)&cs.mask]
	}
	pn := pendNote{n: *n, day: day, sh: sh}
	pn.n.User = ""
	if minExp := w.opts.Now().Add(MinNoticeTTL); pn.n.Expires.Before(minExp) {
		pn.n.Expires = minExp
	}
	sh.mu.Lock()
	if userID != "" && period > 0 {
		win, end := windowOf(at, period)
		k := freqKey{user: userID, window: win}
		e := sh.freq[k]
		if e == nil {
			if sh.freq == nil {
				sh.freq = make(map[freqKey]*freqEntry)
			}
			k.user = strings.Clone(userID)
			e = &freqEntry{key: k, end: end, expires: end + int64(w.opts.FreqGrace/time.Second)}
			sh.freq[k] = e
		}
		e.pending++
		pn.e, pn.n.User = e, e.key.user
	}
	sh.notes = append(sh.notes, pn)
	sh.mu.Unlock()

	cs.exp.billed(at)
	pm := cs.pendMicros.Add(micros)
	pi := cs.pendImps.Add(1)
	w.m.adds.Inc()
	if w.overThreshold(cs, set, pm, pi) {
		w.kick(cs)
	}
	return nil
}

func (w *Writer) overThreshold(cs *campState, set *CampaignBudget, pm, pi int64) bool {
	if w.opts.ThresholdImps > 0 && pi >= w.opts.ThresholdImps {
		return true
	}
	if w.opts.ThresholdMicros > 0 && pm >= w.opts.ThresholdMicros {
		return true
	}
	if w.opts.BudgetFraction > 0 && set != nil {
		b := set.DailyMicros
		if b <= 0 {
			b = set.TotalMicros
		}
		if b > 0 && float64(pm) >= float64(b)*w.opts.BudgetFraction {
			return true
		}
	}
	return false
}

// kick queues cs for an early flush unless it is queued already, backing
// off, or the queue is full (then the timer flushes it).
func (w *Writer) kick(cs *campState) {
	if cs.queued.Load() || cs.retryAt.Load() > w.opts.Now().UnixNano() {
		return
	}
	if cs.queued.Swap(true) {
		return
	}
	w.outstanding.Add(1)
	select {
	case w.queue <- cs:
		w.m.kicks.Inc()
	default:
		w.outstanding.Add(-1)
		cs.queued.Store(false)
		w.m.queueFull.Inc()
	}
}

// dayCounter returns the budget-view counter of day, rotating to a new one
// when day is later than the current one, or nil for an earlier day (a late
// notice: counted in the total only).
func (cs *campState) dayCounter(day int32) *dayCounter {
	dc := cs.day.Load()
	if dc != nil && dc.day == day {
		return dc
	}
	if dc != nil && day < dc.day {
		return nil
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	dc = cs.day.Load()
	if dc != nil && dc.day >= day {
		if dc.day == day {
			return dc
		}
		return nil
	}
	n := &dayCounter{day: day}
	cs.day.Store(n)
	return n
}

// campaign returns the state of id, creating it (unknown settings) if needed.
func (w *Writer) campaign(id string) *campState {
	if cs := (*w.camps.Load())[id]; cs != nil {
		return cs
	}
	return w.insert(id, nil)
}

func (w *Writer) lookup(id string) *campState { return (*w.camps.Load())[id] }

func (w *Writer) insert(id string, set *CampaignBudget) *campState {
	w.campsMu.Lock()
	defer w.campsMu.Unlock()
	old := *w.camps.Load()
	if cs := old[id]; cs != nil {
		if set != nil {
			cs.set.Store(set)
		}
		return cs
	}
	cs := &campState{
		id:     strings.Clone(id),
		mask:   uint32(w.opts.Shards - 1),
		shards: make([]shard, w.opts.Shards),
	}
	if set != nil {
		cs.set.Store(set)
		cs.active.Store(true)
	}
	m := make(map[string]*campState, len(old)+1)
	for k, v := range old {
		m[k] = v
	}
	m[cs.id] = cs
	w.camps.Store(&m)
	return cs
}

// SetCampaigns registers the settings of the current campaigns (time zone,
// budgets, frequency cap): call it at start and after every campaign reload.
// Campaigns not listed keep their buffers and are still flushed, but their
// fleet totals are no longer refreshed. Budgets.Check registers a campaign
// it has not seen on its own, so calling SetCampaigns is an optimisation
// except for notices that arrive before any Check (after a restart): those
// of an unregistered campaign count in UTC days and without frequency.
func (w *Writer) SetCampaigns(cs []CampaignBudget) {
	listed := make(map[string]bool, len(cs))
	for i := range cs {
		c := cs[i]
		listed[c.ID] = true
		st := w.lookup(c.ID)
		if st == nil {
			w.insert(c.ID, &c)
			continue
		}
		if old := st.set.Load(); old == nil || *old != c {
			st.set.Store(&c)
		}
		st.active.Store(true)
	}
	for id, st := range *w.camps.Load() {
		if !listed[id] {
			st.active.Store(false)
		}
	}
}

// Close stops accepting Adds (they return ErrClosed), waits for the Adds in
// progress, and flushes everything, retrying failed flushes with backoff
// until all is confirmed or ctx ends. Then it stops the goroutines. When ctx
// ends first, the error wraps ErrUnflushed and says how much spend (micros)
// and how many impressions were not confirmed by the store: that is what a
// SIGTERM with an unreachable store loses. Close is idempotent.
func (w *Writer) Close(ctx context.Context) error {
	w.closeOnce.Do(func() { w.closeErr = w.close(ctx) })
	return w.closeErr
}

func (w *Writer) close(ctx context.Context) error {
	defer w.cancelBase()
	stopAfter := context.AfterFunc(ctx, w.cancelBase)
	defer stopAfter()
	w.closed.Store(true)
	for w.active.Load() != 0 {
		time.Sleep(50 * time.Microsecond)
	}
	close(w.stop)
	w.loops.Wait()
	var err error
	for {
		if !w.enqueueReady(ctx.Done()) {
			break
		}
		// Wait for the flushers to go idle.
		for w.outstanding.Load() != 0 && ctx.Err() == nil {
			time.Sleep(time.Millisecond)
		}
		if ctx.Err() != nil {
			break
		}
		left, next := w.pending()
		if left == 0 {
			break
		}
		if next > 0 {
			wait := time.Duration(next - w.opts.Now().UnixNano())
			wait = min(max(wait, time.Millisecond), 100*time.Millisecond)
			select {
			case <-ctx.Done():
			case <-time.After(wait):
			}
		}
	}
	// Let the flushers drain the queue; once ctx has ended their store
	// calls fail at once (base is canceled) and the deltas stay unflushed.
	for w.outstanding.Load() != 0 {
		time.Sleep(time.Millisecond)
	}
	close(w.queue)
	w.workers.Wait()
	if left, _ := w.pending(); left > 0 {
		micros, imps := w.unconfirmed()
		err = fmt.Errorf("%w: %d campaigns, %d micros, %d impressions: %v", ErrUnflushed, left, micros, imps, ctx.Err())
		w.log.Error("spend: closing with unflushed spend", zap.Error(err))
	}
	return err
}

// pending counts campaigns with unflushed counts or a retry, and the
// earliest retry time (unix nanos, 0 if none).
func (w *Writer) pending() (n int, next int64) {
	for _, cs := range *w.camps.Load() {
		if cs.pendImps.Load() == 0 && cs.counts.any.Load() == 0 && !cs.hasRetry.Load() {
			continue
		}
		n++
		if r := cs.retryAt.Load(); r > 0 && (next == 0 || r < next) {
			next = r
		}
	}
	return n, next
}

// unconfirmed sums the spend and impressions not yet confirmed by the
// store. Only called once the flushers have exited (it reads cs.retry).
func (w *Writer) unconfirmed() (micros, imps int64) {
	for _, cs := range *w.camps.Load() {
		micros += cs.unflTotal.Load()
		imps += max(cs.pendImps.Load(), 0)
		if cs.hasRetry.Load() {
			if b := cs.retry; b != nil {
				for _, d := range b.deltas {
					imps += d.Imps
				}
			}
		}
	}
	return micros, imps
}

func (w *Writer) unflushedMicros() int64 {
	var n int64
	for _, cs := range *w.camps.Load() {
		n += cs.unflTotal.Load()
	}
	return n
}

func (w *Writer) retrying() int {
	n := 0
	for _, cs := range *w.camps.Load() {
		if cs.hasRetry.Load() {
			n++
		}
	}
	return n
}

// Flush queues every campaign with unflushed counts or a due retry and
// waits until the flushers are idle or ctx ends. It is for tests and for an
// admin "flush now"; it does not retry a failed flush before its backoff.
func (w *Writer) Flush(ctx context.Context) error {
	if w.closed.Load() {
		return ErrClosed
	}
	if !w.enqueueReady(ctx.Done()) {
		return ctx.Err()
	}
	for w.outstanding.Load() != 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		time.Sleep(time.Millisecond)
	}
	return nil
}

func (cs *campState) location() *time.Location {
	if s := cs.set.Load(); s != nil {
		return s.location()
	}
	return time.UTC
}

// dayOf is t's date in loc as yyyymmdd.
func dayOf(t time.Time, loc *time.Location) int32 {
	y, m, d := t.In(loc).Date()
	return int32(y*10000 + int(m)*100 + d)
}

func dayString(k int32) string {
	var b [10]byte
	y, m, d := int(k/10000), int(k/100%100), int(k%100)
	b[0], b[1], b[2], b[3] = byte('0'+y/1000%10), byte('0'+y/100%10), byte('0'+y/10%10), byte('0'+y%10)
	b[4] = '-'
	b[5], b[6] = byte('0'+m/10), byte('0'+m%10)
	b[7] = '-'
	b[8], b[9] = byte('0'+d/10), byte('0'+d%10)
	return string(b[:])
}

// windowOf returns the fixed cap window holding t: its start and end in
// unix seconds. Windows are aligned to the unix epoch (a 24h period starts
// at midnight UTC).
func windowOf(t time.Time, period time.Duration) (start, end int64) {
	p := int64(period / time.Second)
	if p <= 0 {
		p = 1
	}
	s := t.Unix()
	start = s - ((s%p)+p)%p
	return start, start + p
}

// hashString is FNV-1a.
func hashString(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return h
}
