package spend

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
)

// Defaults applied by NewWriter to zero-valued Options fields.
const (
	DefaultFlushInterval   = time.Second
	DefaultFlushers        = 4
	DefaultQueueSize       = 1024
	DefaultMaxBatch        = 64
	DefaultThresholdImps   = 1000
	DefaultBudgetFraction  = 0.01
	DefaultFlushTimeout    = 2 * time.Second
	DefaultRetryMin        = 100 * time.Millisecond
	DefaultRetryMax        = 10 * time.Second
	DefaultMaxDeltaUsers   = 1000
	DefaultMaxFlushNotices = 10_000
	DefaultFreqGrace       = time.Hour
	DefaultShards          = 8
	DefaultSweepInterval   = time.Minute
)

// Options configures a Writer. The zero value is usable: each field says its
// default.
type Options struct {
	// FlushInterval is the timer flush: every campaign with unflushed spend is
	// flushed at least this often, and the fleet totals of campaigns this
	// bidder did not flush are read this often. Default 1s (config
	// spend.flush_interval). It bounds how stale a bidder's view of the
	// fleet's spend is, and what a crash can lose.
	FlushInterval time.Duration
	// Flushers is the number of flusher goroutines, so the most concurrent
	// Store.Flush calls. Default 4 (spend.flushers).
	Flushers int
	// QueueSize is the capacity of the channel feeding the flushers, in
	// campaigns. Default 1024. A full queue never blocks Add: the campaign
	// waits for the timer.
	QueueSize int
	// MaxBatch is the most campaigns one Store.Flush call carries. Default 64.
	MaxBatch int
	// ThresholdImps flushes a campaign early once it has this many unflushed
	// impressions. Default 1000 (spend.threshold_imps); negative disables.
	ThresholdImps int64
	// ThresholdMicros flushes a campaign early once it has this much
	// unflushed spend (micros). Default 0: disabled (spend.threshold_micros).
	ThresholdMicros int64
	// BudgetFraction flushes a campaign early once its unflushed spend
	// reaches this fraction of its daily budget (or of its total budget when
	// it has no daily one), so small budgets are shared with the fleet
	// quickly. Default 0.01; negative disables (spend.budget_fraction).
	BudgetFraction float64
	// FlushTimeout bounds one Store.Flush or Store.Read call. Default 2s
	// (spend.flush_timeout).
	FlushTimeout time.Duration
	// RetryMin and RetryMax bound the exponential backoff between retries of
	// a failed flush (with +-20% jitter). Defaults 100ms and 10s.
	RetryMin, RetryMax time.Duration
	// MaxDeltaUsers is the most notices, and so FreqDelta entries, in one
	// Delta; more are sent in extra deltas of the same batch. Default 1000.
	MaxDeltaUsers int
	// MaxFlushNotices is the most notices one Store.Flush call carries, over
	// all its campaigns. A backlog (after a store outage) is flushed in calls
	// of at most this many, each well within FlushTimeout, rather than in one
	// call that could never finish in time. Default 10,000.
	MaxFlushNotices int
	// FreqGrace is added to a frequency window's end to make the store
	// expiry of its counts. Default 1h.
	FreqGrace time.Duration
	// Shards is the number of lock shards per campaign (rounded up to a
	// power of two). Default 8.
	Shards int
	// SweepInterval is how often expired frequency entries are dropped from
	// memory. Default 1m.
	SweepInterval time.Duration
	// InstanceID names this bidder in the store's records (spend.instance_id,
	// default the host name): stable across restarts, unique in the fleet;
	// two processes running at once must never share one. It is every
	// delta's Origin. Default: "w-" + WriterID, unique per process run, so
	// a restarted Writer does not recognise notices it left in doubt
	// before (Aerospike then counts them as another bidder's: see
	// aerostore).
	InstanceID string
	// Confirmed, when set, is called with the Notice.Seq values (non-zero
	// ones) of notices the store has applied or found already applied, so a
	// journal can drop them. It is called from flusher goroutines and must
	// not block for long.
	Confirmed func(seqs []uint64)
	// WriterID prefixes every Delta.ID; it must be unique per process run.
	// Default: 12 random hex digits.
	WriterID string
	// Now is the clock for backoff and freshness. Default time.Now.
	Now func() time.Time
	// Logger default zap.NewNop(); Registerer default: metrics not registered.
	Logger     *zap.Logger
	Registerer prometheus.Registerer
}

func (o *Options) ensureDefaults() error {
	if o.FlushInterval == 0 {
		o.FlushInterval = DefaultFlushInterval
	}
	if o.Flushers == 0 {
		o.Flushers = DefaultFlushers
	}
	if o.QueueSize == 0 {
		o.QueueSize = DefaultQueueSize
	}
	if o.MaxBatch == 0 {
		o.MaxBatch = DefaultMaxBatch
	}
	if o.ThresholdImps == 0 {
		o.ThresholdImps = DefaultThresholdImps
	}
	if o.BudgetFraction == 0 {
		o.BudgetFraction = DefaultBudgetFraction
	}
	if o.FlushTimeout == 0 {
		o.FlushTimeout = DefaultFlushTimeout
	}
	if o.RetryMin == 0 {
		o.RetryMin = DefaultRetryMin
	}
	if o.RetryMax == 0 {
		o.RetryMax = DefaultRetryMax
	}
	if o.MaxDeltaUsers == 0 {
		o.MaxDeltaUsers = DefaultMaxDeltaUsers
	}
	if o.MaxFlushNotices == 0 {
		o.MaxFlushNotices = DefaultMaxFlushNotices
	}
	if o.FreqGrace == 0 {
		o.FreqGrace = DefaultFreqGrace
	}
	if o.Shards == 0 {
		o.Shards = DefaultShards
	}
	if o.SweepInterval == 0 {
		o.SweepInterval = DefaultSweepInterval
	}
	if o.WriterID == "" {
		var b [6]byte
		if _, err := rand.Read(b[:]); err != nil {
			return fmt.Errorf("spend: writer id: %w", err)
		}
		o.WriterID = hex.EncodeToString(b[:])
	}
	if o.InstanceID == "" {
		o.InstanceID = "w-" + o.WriterID
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	var problems []string
	if o.FlushInterval < 0 {
		problems = append(problems, fmt.Sprintf("flush_interval: must be > 0, got %s", o.FlushInterval))
	}
	if o.Flushers < 0 || o.Flushers > 256 {
		problems = append(problems, fmt.Sprintf("flushers: must be 1..256, got %d", o.Flushers))
	}
	if o.QueueSize < 0 || o.MaxBatch < 0 || o.MaxDeltaUsers < 0 || o.MaxFlushNotices < 0 || o.Shards < 0 || o.Shards > 1024 {
		problems = append(problems, "queue_size, max_batch, max_delta_users, shards: must be > 0 (shards <= 1024)")
	}
	if o.FlushTimeout < 0 || o.RetryMin < 0 || o.RetryMax < o.RetryMin || o.FreqGrace < 0 || o.SweepInterval < 0 {
		problems = append(problems, "flush_timeout, retry_min, retry_max (>= retry_min), freq_grace, sweep_interval: must be > 0")
	}
	if o.BudgetFraction >= 1 {
		problems = append(problems, fmt.Sprintf("budget_fraction: must be < 1, got %g", o.BudgetFraction))
	}
	if len(o.WriterID) > 32 || !validDeltaID(o.WriterID) {
		problems = append(problems, fmt.Sprintf("writer id: at most 32 of [0-9A-Za-z._-], got %q", o.WriterID))
	}
	if !ValidID(o.InstanceID) {
		problems = append(problems, fmt.Sprintf("instance_id: 1..%d bytes without control characters or '|', got %q", MaxIDLen, o.InstanceID))
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: options: %v", ErrInvalid, problems)
	}
	// Round shards up to a power of two.
	n := 1
	for n < o.Shards {
		n <<= 1
	}
	o.Shards = n
	return nil
}
