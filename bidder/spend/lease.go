package spend

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// # One live bidder per instance id
//
// Options.InstanceID names a bidder's sealed batches in a shared store
// (Delta.Origin): two live bidders with one id would take each other's
// batches for their own replays. A bidder therefore holds a lease on its
// id in the shared store while it runs (AcquireLease): a record naming the
// holder (host, process id and a random part, new at every start) that
// expires after LeaseOptions.TTL unless renewed; the holder renews it every
// TTL/3 in the background and frees it on Close.
//
// At start, a lease held by another holder is waited for, up to TTL and a
// renewal period more: a holder that crashed (kill -9, a lost machine)
// renews no more, so its lease expires within TTL and the new process takes
// it over; a holder that is alive renews it, and the new process gives up
// with a *LeaseHeldError. A store that cannot be reached at start does not
// stop the process (a store outage never does): the lease is then taken in
// the background, and a renewal that finds it held by another process
// marks it lost (Lost: the bidder's /readyz turns 503 and the log says
// why). The embedded Pebble store needs no lease: its directory is locked
// by the process that opens it.

// DefaultLeaseTTL is LeaseOptions.TTL's default.
const DefaultLeaseTTL = 10 * time.Second

// LeaseStore is a shared store that can hold instance leases (the Redis
// and Aerospike spend stores).
type LeaseStore interface {
	// TakeLease makes holder the holder of the lease on id for ttl when
	// the lease is free, expired or held by holder already (a renewal).
	// held false: other is the holder now.
	TakeLease(ctx context.Context, id, holder string, ttl time.Duration) (held bool, other string, err error)
	// ReleaseLease frees the lease on id when holder holds it.
	ReleaseLease(ctx context.Context, id, holder string) error
}

// LeaseOptions configures AcquireLease. The zero value is usable.
type LeaseOptions struct {
	// TTL is how long the lease outlives its last renewal: the longest a
	// restart after a crash waits. Default DefaultLeaseTTL; at least 1s.
	TTL time.Duration
	// Logger is told of waits, lost leases and failed renewals. Default: none.
	Logger *zap.Logger
}

// ErrLeaseHeld is what a *LeaseHeldError matches with errors.Is.
var ErrLeaseHeld = errors.New("spend: instance lease held by another live process")

// LeaseHeldError is AcquireLease's answer when another live process holds
// the lease on ID.
type LeaseHeldError struct {
	ID, Holder string
	Waited     time.Duration
}

func (e *LeaseHeldError) Error() string {
	return fmt.Sprintf("spend: instance id %q is held by another live process (%s), still renewing after %s: "+
		"each bidder on a shared store needs its own spend.instance_id", e.ID, e.Holder, e.Waited.Round(time.Millisecond))
}

// Is makes errors.Is(err, ErrLeaseHeld) true.
func (e *LeaseHeldError) Is(target error) bool { return target == ErrLeaseHeld }

// Lease is a held instance lease, renewed in the background until Close.
// Its methods are safe for concurrent use.
type Lease struct {
	st     LeaseStore
	id     string
	holder string
	ttl    time.Duration
	log    *zap.Logger
	state  atomic.Int32 // leaseUnknown, leaseHeld, leaseLost
	stop   chan struct{}
	done   chan struct{}
	once   sync.Once
}

// Lease states.
const (
	leaseUnknown = iota // not taken yet, the store unreachable
	leaseHeld
	leaseLost // another process holds it
)

// NewLeaseHolder returns a holder name unique to this start of this
// process: host, process id and a random part.
func NewLeaseHolder() string {
	h, _ := os.Hostname()
	var r [6]byte
	_, _ = rand.Read(r[:])
	return fmt.Sprintf("%s/pid-%d/%s", h, os.Getpid(), hex.EncodeToString(r[:]))
}

// AcquireLease takes the lease on id in st for holder (NewLeaseHolder), waiting
// for a lease held by another process to expire up to TTL and a renewal
// period more, and then renews it in the background. A lease still held
// after that wait is a *LeaseHeldError. A store error returns the Lease
// not yet taken (Held false, Lost false), taken in the background as soon
// as the store answers. ctx bounds the wait.
func AcquireLease(ctx context.Context, st LeaseStore, id, holder string, opts LeaseOptions) (*Lease, error) {
	if opts.TTL <= 0 {
		opts.TTL = DefaultLeaseTTL
	}
	if opts.TTL < time.Second {
		return nil, fmt.Errorf("spend: lease ttl %s: must be at least 1s", opts.TTL)
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	l := &Lease{st: st, id: id, holder: holder, ttl: opts.TTL, log: opts.Logger,
		stop: make(chan struct{}), done: make(chan struct{})}
	start := time.Now()
	limit := opts.TTL + l.period()
	retry := max(opts.TTL/20, 50*time.Millisecond)
	for told := false; ; {
		held, other, err := l.take(ctx)
		switch {
		case err != nil:
			l.log.Warn("spend: instance lease: the store does not answer; serving, and taking the lease in the background",
				zap.String("instance_id", id), zap.Error(err))
			go l.renew()
			return l, nil
		case held:
			l.state.Store(leaseHeld)
			go l.renew()
			return l, nil
		case !told:
			told = true
			l.log.Warn("spend: instance lease held by another process; waiting for it to expire (a crashed bidder's lease does within spend.instance_lease)",
				zap.String("instance_id", id), zap.String("holder", other), zap.Duration("wait_at_most", limit))
		}
		waited := time.Since(start)
		if waited >= limit {
			return nil, &LeaseHeldError{ID: id, Holder: other, Waited: waited}
		}
		t := time.NewTimer(min(retry, limit-waited))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("spend: instance lease on %q: %w", id, ctx.Err())
		case <-t.C:
		}
	}
}

func (l *Lease) period() time.Duration { return l.ttl / 3 }

func (l *Lease) take(ctx context.Context) (bool, string, error) {
	ctx, cancel := context.WithTimeout(ctx, l.period())
	defer cancel()
	return l.st.TakeLease(ctx, l.id, l.holder, l.ttl)
}

func (l *Lease) renew() {
	defer close(l.done)
	t := time.NewTicker(l.period())
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
		held, other, err := l.take(context.Background())
		switch {
		case err != nil:
			l.log.Warn("spend: instance lease renewal failed; retrying", zap.String("instance_id", l.id), zap.Error(err))
		case !held:
			if l.state.Swap(leaseLost) != leaseLost {
				l.log.Error("spend: instance lease held by another process: another bidder runs with this spend.instance_id",
					zap.String("instance_id", l.id), zap.String("holder", other))
			}
		default:
			if l.state.Swap(leaseHeld) != leaseHeld {
				l.log.Info("spend: instance lease taken", zap.String("instance_id", l.id))
			}
		}
	}
}

// Held reports whether the last answer of the store gave the lease to this
// process (a renewal the store does not answer keeps the last answer: the
// lease outlives it by up to TTL).
func (l *Lease) Held() bool { return l.state.Load() == leaseHeld }

// Lost reports whether the last answer of the store was that another
// process holds the lease.
func (l *Lease) Lost() bool { return l.state.Load() == leaseLost }

// Holder is this process's holder name.
func (l *Lease) Holder() string { return l.holder }

// Close stops the renewals and frees the lease, so that a restart takes it
// at once. Safe to call more than once.
func (l *Lease) Close(ctx context.Context) error {
	var err error
	l.once.Do(func() {
		close(l.stop)
		<-l.done
		l.state.Store(leaseUnknown)
		err = l.st.ReleaseLease(ctx, l.id, l.holder)
	})
	return err
}

// ID is the instance id the lease is on.
func (l *Lease) ID() string { return l.id }
