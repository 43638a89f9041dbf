package campaign

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
)

// Watcher defaults.
const (
	// DefaultDebounce is how long the Watcher waits after the last change
	// event in the directory before reading the file (editors write in steps).
	DefaultDebounce = 50 * time.Millisecond
	// DefaultPollInterval is the period of the poll fallback, which compares
	// the file's mtime, size and identity, then its SHA-256.
	DefaultPollInterval = 2 * time.Second
)

// Watcher keeps the current Set of a campaigns file. It watches the file's
// directory with fsnotify (so editors' write-to-temp-and-rename and
// Kubernetes ConfigMap symlink swaps are seen), waits DefaultDebounce after
// the last event, and also polls every DefaultPollInterval (for file
// systems without events, and missed ones). A changed file (by content
// hash) is parsed; when valid it replaces the current Set; when invalid the
// old Set stays, every problem is logged on one line by key, and the
// failure is counted. A file that cannot be read counts as invalid too.
//
// Metrics, on the Registerer given (re-used if already registered there):
// rtbd_campaign_reloads_total{result="ok"|"invalid"} (counter) and
// rtbd_campaigns{state="active"|"paused"} (gauge, the current Set).
//
// All methods are safe for concurrent use; Current is one atomic load.
type Watcher struct {
	path     string
	log      *zap.Logger
	debounce time.Duration
	poll     time.Duration

	cur     atomic.Pointer[Set]
	lastErr atomic.Pointer[errBox]
	nOK     atomic.Int64
	nFailed atomic.Int64

	reloadsOK, reloadsInvalid prometheus.Counter
	gaugeActive, gaugePaused  prometheus.Gauge

	fsw       *fsnotify.Watcher // nil when fsnotify is unavailable
	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
	closeErr  error

	// Owned by the loop goroutine.
	lastStat   os.FileInfo
	lastHash   [sha256.Size]byte
	lastReadEr string
}

type errBox struct{ err error }

// watcherOptions are the knobs tests turn.
type watcherOptions struct {
	debounce time.Duration
	poll     time.Duration
	noNotify bool // poll only
}

// NewWatcher loads the campaigns file at path and starts watching it. It
// fails if that first load fails (the error is the *ValidationError or the
// read error) or if metrics cannot be registered. log and reg may be nil
// (no logging; no metrics registered). Close stops it.
func NewWatcher(path string, log *zap.Logger, reg prometheus.Registerer) (*Watcher, error) {
	return newWatcher(path, log, reg, watcherOptions{})
}

func newWatcher(path string, log *zap.Logger, reg prometheus.Registerer, o watcherOptions) (*Watcher, error) {
	if log == nil {
		log = zap.NewNop()
	}
	if o.debounce <= 0 {
		o.debounce = DefaultDebounce
	}
	if o.poll <= 0 {
		o.poll = DefaultPollInterval
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("campaign: %w", err)
	}
	w := &Watcher{
		path:     abs,
		log:      log.With(zap.String("file", abs)),
		debounce: o.debounce,
		poll:     o.poll,
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	if err := w.metrics(reg); err != nil {
		return nil, err
	}
	data, st, err := w.read()
	if err != nil {
		return nil, err
	}
	set, err := Parse(data, abs)
	if err != nil {
		return nil, err
	}
	w.lastStat, w.lastHash = st, sha256.Sum256(data)
	w.install(set)

	if !o.noNotify {
		fsw, err := fsnotify.NewWatcher()
		if err == nil {
			err = fsw.Add(filepath.Dir(abs))
			if err != nil {
				fsw.Close()
			}
		}
		if err != nil {
			w.log.Warn("campaign: file events unavailable, polling only",
				zap.Error(err), zap.Duration("poll", w.poll))
		} else {
			w.fsw = fsw
		}
	}
	go w.loop()
	return w, nil
}

func (w *Watcher) metrics(reg prometheus.Registerer) error {
	reloads := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "rtbd_campaign_reloads_total",
		Help: "Reloads of the campaigns file after a change, by result (ok, or invalid: old campaigns kept).",
	}, []string{"result"})
	gauge := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "rtbd_campaigns",
		Help: "Campaigns in the current campaigns file, by status.",
	}, []string{"state"})
	if reg != nil {
		var err error
		if reloads, err = register(reg, reloads); err != nil {
			return err
		}
		if gauge, err = register(reg, gauge); err != nil {
			return err
		}
	}
	w.reloadsOK = reloads.WithLabelValues("ok")
	w.reloadsInvalid = reloads.WithLabelValues("invalid")
	w.gaugeActive = gauge.WithLabelValues(StatusActive)
	w.gaugePaused = gauge.WithLabelValues(StatusPaused)
	return nil
}

// register registers c, or returns the collector already registered under
// its name (a second Watcher on the same registry shares the metrics).
func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if ex, ok := are.ExistingCollector.(C); ok {
				return ex, nil
			}
		}
		return c, fmt.Errorf("campaign: metrics: %w", err)
	}
	return c, nil
}

// Current returns the current Set (never nil). Safe for concurrent use.
func (w *Watcher) Current() *Set { return w.cur.Load() }

// Reloads returns how many reloads succeeded and failed since NewWatcher
// (the first load is not counted).
func (w *Watcher) Reloads() (ok, failed int64) { return w.nOK.Load(), w.nFailed.Load() }

// LastError returns the error of the last reload attempt (a
// *ValidationError or a read error), or nil if it succeeded or none was
// made yet.
func (w *Watcher) LastError() error {
	if b := w.lastErr.Load(); b != nil {
		return b.err
	}
	return nil
}

// Close stops watching. It is idempotent; Current keeps returning the last Set.
func (w *Watcher) Close() error {
	w.closeOnce.Do(func() {
		close(w.stop)
		<-w.done
		if w.fsw != nil {
			w.closeErr = w.fsw.Close()
		}
	})
	return w.closeErr
}

func (w *Watcher) install(s *Set) {
	w.cur.Store(s)
	a, p := s.Counts()
	w.gaugeActive.Set(float64(a))
	w.gaugePaused.Set(float64(p))
}

func (w *Watcher) loop() {
	defer close(w.done)
	var events <-chan fsnotify.Event
	var errs <-chan error
	if w.fsw != nil {
		events, errs = w.fsw.Events, w.fsw.Errors
	}
	ticker := time.NewTicker(w.poll)
	defer ticker.Stop()
	debounce := time.NewTimer(time.Hour)
	debounce.Stop()
	defer debounce.Stop()
	base := filepath.Base(w.path)
	// A stream of events postpones the check by at most maxDelay.
	maxDelay := 20 * w.debounce
	var pendingSince time.Time
	for {
		select {
		case <-w.stop:
			return
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			// The file itself, or a Kubernetes ConfigMap's "..data" /
			// "..2026_01_02..." entries swapped under it.
			if name := filepath.Base(ev.Name); name == base || strings.HasPrefix(name, "..") {
				if pendingSince.IsZero() {
					pendingSince = time.Now()
				}
				if time.Since(pendingSince) < maxDelay {
					debounce.Reset(w.debounce)
				}
			}
		case err, ok := <-errs:
			if !ok {
				errs = nil
				continue
			}
			w.log.Warn("campaign: file watch error, checking the file", zap.Error(err))
			if pendingSince.IsZero() {
				pendingSince = time.Now()
			}
			debounce.Reset(w.debounce)
		case <-debounce.C:
			pendingSince = time.Time{}
			w.check(true)
		case <-ticker.C:
			w.check(false)
		}
	}
}

// check reloads the file if its content changed. Unless force, a file with
// the same identity, size and mtime is not read.
func (w *Watcher) check(force bool) {
	if !force && w.lastStat != nil {
		if st, err := os.Stat(w.path); err == nil && os.SameFile(st, w.lastStat) &&
			st.Size() == w.lastStat.Size() && st.ModTime().Equal(w.lastStat.ModTime()) {
			return
		}
	}
	data, st, err := w.read()
	if err != nil {
		// Report a read error once, not at every poll while it lasts.
		if msg := err.Error(); msg != w.lastReadEr {
			w.lastReadEr = msg
			w.fail(err)
			w.log.Error("campaign: cannot read the campaigns file; keeping the previous campaigns", zap.Error(err))
		}
		return
	}
	w.lastReadEr = ""
	w.lastStat = st
	h := sha256.Sum256(data)
	if h == w.lastHash {
		return
	}
	w.lastHash = h
	set, err := Parse(data, w.path)
	if err != nil {
		w.fail(err)
		var ve *ValidationError
		if errors.As(err, &ve) {
			w.log.Error("campaign: invalid campaigns file; keeping the previous campaigns",
				zap.Int("problems", len(ve.Problems)), zap.Strings("keys", ve.Problems))
		} else {
			w.log.Error("campaign: cannot load the campaigns file; keeping the previous campaigns", zap.Error(err))
		}
		return
	}
	w.install(set)
	w.lastErr.Store(nil)
	w.nOK.Add(1)
	w.reloadsOK.Inc()
	a, p := set.Counts()
	w.log.Info("campaign: campaigns reloaded", zap.Int("active", a), zap.Int("paused", p))
}

func (w *Watcher) fail(err error) {
	w.lastErr.Store(&errBox{err})
	w.nFailed.Add(1)
	w.reloadsInvalid.Inc()
}

// read reads the file (following symlinks) and returns its FileInfo as of
// before the read.
func (w *Watcher) read() ([]byte, os.FileInfo, error) {
	st, err := os.Stat(w.path)
	if err != nil {
		return nil, nil, fmt.Errorf("campaign: %w", err)
	}
	data, err := readFile(w.path)
	if err != nil {
		return nil, nil, err
	}
	return data, st, nil
}
