package records

import (
	crand "crypto/rand"
	"encoding/binary"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// Sink writes the records a Recorder hands it, from one goroutine of the
// Recorder's (Write, Tick and Close are never called concurrently by the
// Recorder). A record a sink cannot write (its disk is full, its brokers
// are down) is dropped and counted by the sink, never retried at the
// expense of memory.
type Sink interface {
	// Name is the sink's metric label (SinkFile, SinkKafka).
	Name() string
	// Write writes recs. The records (and their strings) are the sink's
	// until it returns.
	Write(recs []Record)
	// Tick is called every Options.FlushInterval: roll files, apply
	// retention.
	Tick(now time.Time)
	// Close writes what is buffered and releases the sink.
	Close() error
}

// Options configures a Recorder. The zero value of each field is its
// default.
type Options struct {
	// Instance names this bidder in every record (records' instance
	// column, file names). Required.
	Instance string
	// BufferBytes bounds each sink's buffer of records not yet written
	// (records.buffer_bytes); default 64 MiB.
	BufferBytes int
	// NoBidSample keeps one no-bid record in NoBidSample
	// (records.nobid_sample); 0 keeps none.
	NoBidSample int
	// FlushInterval is how often a partly filled buffer chunk is handed to
	// its sink and the sink's Tick runs; default 1s.
	FlushInterval time.Duration
	// Metrics counts drops (nil: not counted).
	Metrics *Metrics
	// Logger; default zap.NewNop().
	Logger *zap.Logger
}

// DefaultBufferBytes is Options.BufferBytes' default.
const DefaultBufferBytes = 64 << 20

// Recorder hands records from the bid path to its sinks without blocking
// and without allocating: Put copies a record into each sink's bounded
// buffer, or drops it (counted in rtbd_records_dropped_total{kind,sink})
// when that buffer is full because the sink is slow or down. A nil
// *Recorder records nothing. Safe for concurrent use.
type Recorder struct {
	opts  Options
	sinks []*sinkLoop

	noncePrefix uint64
	nonceSeq    atomic.Uint64
	nobidSeq    atomic.Uint64

	stop      chan struct{}
	wg        sync.WaitGroup
	closeOnce sync.Once
	closeErr  error
}

type sinkLoop struct {
	sink Sink
	buf  *buffer
	m    *SinkMetrics
}

// ErrNoInstance is returned by NewRecorder without Options.Instance.
var ErrNoInstance = errors.New("records: no instance name")

// NewRecorder starts one goroutine per sink. Close stops them.
func NewRecorder(opts Options, sinks ...Sink) (*Recorder, error) {
	if opts.Instance == "" {
		return nil, ErrNoInstance
	}
	if opts.BufferBytes <= 0 {
		opts.BufferBytes = DefaultBufferBytes
	}
	if opts.FlushInterval <= 0 {
		opts.FlushInterval = time.Second
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	r := &Recorder{opts: opts, stop: make(chan struct{})}
	var p [8]byte
	if _, err := crand.Read(p[:]); err != nil {
		return nil, err
	}
	r.noncePrefix = binary.BigEndian.Uint64(p[:])
	for _, s := range sinks {
		l := &sinkLoop{sink: s, buf: newBuffer(opts.BufferBytes), m: opts.Metrics.Sink(s.Name())}
		r.sinks = append(r.sinks, l)
		r.wg.Add(1)
		go r.loop(l)
	}
	return r, nil
}

// Instance is Options.Instance ("" for a nil r).
func (r *Recorder) Instance() string {
	if r == nil {
		return ""
	}
	return r.opts.Instance
}

// Put hands rec to every sink: its binary form is copied into each sink's
// buffer (rec may point into memory the caller reuses once Put returns),
// or dropped and counted where the buffer is full. Put sets rec.Instance.
// It never blocks on a sink and allocates nothing.
func (r *Recorder) Put(rec *Record) {
	if r == nil || !rec.Kind.Valid() {
		return
	}
	rec.Instance = r.opts.Instance
	size := rec.BinarySize()
	for _, l := range r.sinks {
		if !l.buf.put(rec, size) {
			l.m.Dropped(rec.Kind, 1)
		}
	}
}

// SampleNoBid reports whether this no-bid is one of the sampled ones (one
// in Options.NoBidSample).
func (r *Recorder) SampleNoBid() bool {
	if r == nil || r.opts.NoBidSample <= 0 {
		return false
	}
	return r.nobidSeq.Add(1)%uint64(r.opts.NoBidSample) == 0
}

// NewNonce returns a nonce unique to this Recorder and call, for records
// without a bid (nobid, view).
func (r *Recorder) NewNonce() Nonce {
	var n Nonce
	if r == nil {
		return n
	}
	binary.BigEndian.PutUint64(n[:8], r.noncePrefix)
	binary.BigEndian.PutUint64(n[8:], r.nonceSeq.Add(1))
	return n
}

func (r *Recorder) loop(l *sinkLoop) {
	defer r.wg.Done()
	t := time.NewTicker(r.opts.FlushInterval)
	defer t.Stop()
	var batch []Record
	dc := &decodeCache{strs: map[string]string{}}
	write := func(c []byte) {
		batch = batch[:0]
		dc.arena = dc.arena[:0:0] // the previous batch's products may still be referenced: a new arena
		for len(c) > 0 {
			batch = append(batch, Record{})
			rest, err := batch[len(batch)-1].decode(c, dc)
			if err != nil { // cannot happen: the buffer holds what AppendBinary wrote
				batch = batch[:len(batch)-1]
				l.m.Fail(err)
				break
			}
			c = rest
		}
		if len(batch) > 0 {
			l.sink.Write(batch)
		}
	}
	for {
		select {
		case c := <-l.buf.full:
			write(c)
			l.buf.free <- c[:0]
		case now := <-t.C:
			l.buf.handoff()
			l.sink.Tick(now)
		case <-r.stop:
			l.buf.handoff()
			for {
				select {
				case c := <-l.buf.full:
					write(c)
					l.buf.free <- c[:0]
					continue
				default:
				}
				break
			}
			return
		}
	}
}

// Close hands what is buffered to the sinks, stops the goroutines and
// closes the sinks. Puts after Close are dropped. Close is idempotent.
func (r *Recorder) Close() error {
	if r == nil {
		return nil
	}
	r.closeOnce.Do(func() {
		close(r.stop)
		r.wg.Wait()
		var errs []error
		for _, l := range r.sinks {
			errs = append(errs, l.sink.Close())
		}
		r.closeErr = errors.Join(errs...)
	})
	return r.closeErr
}
