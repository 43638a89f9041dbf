package records

import (
	"context"
	"time"
)

// ChargeSource is the export log of charge records (the bidder's spend
// journal): each charge is kept, with a sequence number that grows, until
// every exporter's cursor has passed it. Declared here, its consumer's
// home; bidder/spend/journal implements it.
type ChargeSource interface {
	// Cursor is the last seq exporter name has committed (0: none).
	Cursor(name string) (uint64, error)
	// ReadAfter calls fn for up to max records with seq > after, in seq
	// order. rec is only valid during the call.
	ReadAfter(after uint64, max int, fn func(seq uint64, rec []byte) error) error
	// Commit durably moves exporter name's cursor to seq: the records up
	// to it are delivered.
	Commit(name string, seq uint64) error
}

// ChargeSink is a sink that delivers charge records at least once: it
// says which have been made durable (files: in a completed file; Kafka:
// acknowledged by all in-sync replicas).
type ChargeSink interface {
	Name() string
	// WriteCharges takes recs (Seq set, ascending) and returns the highest
	// Seq such that it and every record handed before it is durable (0:
	// nothing new). An error means recs were not taken: they are handed
	// again.
	WriteCharges(recs []Record) (durable uint64, err error)
	// SyncCharges is called after every WriteCharges and when no record
	// is waiting: a file sink completes its open charge file when it is
	// due (or when force is set: shutdown); it returns the durable seq as
	// WriteCharges.
	SyncCharges(now time.Time, force bool) (durable uint64, err error)
}

// ExportOptions configures ExportCharges; zero values are defaults.
type ExportOptions struct {
	// Batch is how many records are read and handed at once; default 1000.
	Batch int
	// Poll is how long the exporter waits when the log is empty; default
	// 200ms.
	Poll time.Duration
	// RetryMin and RetryMax bound the backoff after a sink error; default
	// 100ms and 5s.
	RetryMin, RetryMax time.Duration
	// Metrics counts sink failures (the sinks count what they write).
	Metrics *Metrics
	// DrainTimeout bounds the delivery of what is left once ctx has
	// ended (shutdown); what is not delivered by then stays in the log
	// for the next start. Default 5s.
	DrainTimeout time.Duration
	// OnCommit, when set, is called after each commit of the cursor (tests).
	OnCommit func(seq uint64)
}

// ExportCharges moves charge records from src to sink until ctx ends:
// from the sink's committed cursor, in seq order, committing the cursor
// as the sink makes records durable. A sink error is retried with backoff
// from the last durable record, so a record is delivered at least once
// (again after a crash between delivery and commit: consumers deduplicate
// by nonce and kind). Once ctx ends it delivers what is left (for up to
// DrainTimeout), completes the sink's open charge file and commits.
func ExportCharges(ctx context.Context, src ChargeSource, sink ChargeSink, o ExportOptions) error {
	if o.Batch <= 0 {
		o.Batch = 1000
	}
	if o.Poll <= 0 {
		o.Poll = 200 * time.Millisecond
	}
	if o.RetryMin <= 0 {
		o.RetryMin = 100 * time.Millisecond
	}
	if o.RetryMax <= 0 {
		o.RetryMax = 5 * time.Second
	}
	if o.DrainTimeout <= 0 {
		o.DrainTimeout = 5 * time.Second
	}
	m := o.Metrics.Sink(sink.Name())
	name := sink.Name()
	committed, err := src.Cursor(name)
	if err != nil {
		return err
	}
	read := committed // the last seq handed to the sink
	commit := func(d uint64) {
		if d <= committed {
			return
		}
		if err := src.Commit(name, d); err != nil {
			m.Fail(err)
			return
		}
		committed = d
		if o.OnCommit != nil {
			o.OnCommit(d)
		}
	}
	backoff := time.Duration(0)
	batch := make([]Record, 0, o.Batch)
	var drainUntil time.Time // set once ctx has ended: deliver what is left, for up to DrainTimeout
	for {
		if drainUntil.IsZero() && ctx.Err() != nil {
			drainUntil = time.Now().Add(o.DrainTimeout)
		}
		draining := !drainUntil.IsZero()
		if draining && time.Now().After(drainUntil) {
			if d, err := sink.SyncCharges(time.Now(), true); err == nil {
				commit(d)
			}
			return nil // the rest stays in the log for the next start
		}
		batch = batch[:0]
		err := src.ReadAfter(read, o.Batch, func(seq uint64, v []byte) error {
			batch = append(batch, Record{})
			r := &batch[len(batch)-1]
			if _, err := r.DecodeBinary(v); err != nil {
				batch = batch[:len(batch)-1]
				m.Fail(err) // a damaged record is skipped, not retried forever
				return nil
			}
			r.Seq = seq
			return nil
		})
		if err != nil {
			m.Fail(err)
			if draining {
				return nil
			}
			sleep(ctx, o.Poll)
			continue
		}
		var d uint64
		if len(batch) > 0 {
			d, err = sink.WriteCharges(batch)
		}
		if err == nil { // under a steady load too, a file sink completes its charge file on time
			d, err = sink.SyncCharges(time.Now(), draining && len(batch) == 0)
		}
		if err != nil {
			m.Fail(err)
			backoff = min(max(backoff*2, o.RetryMin), o.RetryMax)
			read = committed // hand everything not durable again
			if draining {
				time.Sleep(min(backoff, time.Until(drainUntil)))
			} else {
				sleep(ctx, backoff)
			}
			continue
		}
		backoff = 0
		if len(batch) > 0 {
			read = batch[len(batch)-1].Seq
		}
		commit(d)
		if draining && len(batch) == 0 {
			return nil // everything delivered and committed
		}
		if len(batch) < o.Batch && !draining {
			sleep(ctx, o.Poll)
		}
	}
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
