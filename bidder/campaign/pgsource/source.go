// Package pgsource reads the bidder's campaigns from a PostgreSQL table
// (campaigns.source: postgres), so that every bidder of a fleet bids on the
// same campaigns.
//
// The table is Schema (schema.sql beside this file): one row per campaign,
// an enabled flag, updated_at, and the campaign itself as a jsonb object
// with the keys of the campaigns file. Every refresh interval the Source
// reads the whole table in one REPEATABLE READ, read-only transaction (a
// poll of updated_at alone would miss deleted rows and rows committed out
// of order), decodes each row with campaign.DecodeSpec, and compiles the
// rows into a campaign.Set with campaign.Compile, the checks of the file.
//
//   - a row that is gone, or has enabled = false, stops its campaign;
//   - a bad row (unknown key, bad value, an id in spec other than the
//     row's) keeps that campaign's last good version, or leaves it out if
//     it has none, while the other rows update. It is logged by campaign id,
//     with the fields and problems, when it turns bad or changes, and counted
//     in rtbd_campaigns_rejected_rows;
//   - a read that fails (database down) keeps the current Set, logged and
//     counted.
//
// Schema's trigger NOTIFYs Channel after every change; the Source LISTENs
// on it and reads the table at once, so a change is used within moments
// rather than at the next interval (which still runs: notifications missed
// while the listening connection was down are caught by it).
//
// Metrics, on the Registerer given: rtbd_campaign_refreshes_total{result=
// "ok"|"failed"}, rtbd_campaigns{state="active"|"paused"} (the current Set,
// as the file Watcher has it) and rtbd_campaigns_rejected_rows.
package pgsource

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/rtbd/rtbd/bidder/campaign"
)

// Schema creates the campaigns table (if absent): schema.sql.
//
//go:embed schema.sql
var Schema string

// Table is the campaigns table Schema creates.
const Table = "rtbd_campaigns"

// Channel is the notification channel Schema's trigger NOTIFYs after every
// change of Table; a Source LISTENs on it and refreshes at once.
const Channel = "rtbd_campaigns"

// Errors of Open and Refresh, wrapped with the cause.
var (
	// ErrConnect: the DSN is malformed or the database cannot be reached.
	ErrConnect = errors.New("pgsource: connect")
	// ErrRead: the campaigns table could not be read.
	ErrRead = errors.New("pgsource: read campaigns table")
)

// Options configure a Source.
type Options struct {
	// DSN is the connection string (campaigns.postgres.dsn).
	DSN string
	// Interval is the refresh period (campaigns.refresh_interval); <= 0:
	// no background refresh (Refresh only).
	Interval time.Duration
	// Logger and Registerer may be nil (no logging, no metrics).
	Logger     *zap.Logger
	Registerer prometheus.Registerer
}

// Source keeps the current campaign Set read from the campaigns table. All
// methods are safe for concurrent use; Current is one atomic load.
type Source struct {
	pool     *pgxpool.Pool
	log      *zap.Logger
	interval time.Duration

	cur atomic.Pointer[campaign.Set]

	refreshOK, refreshFailed prometheus.Counter
	gaugeActive, gaugePaused prometheus.Gauge
	gaugeRejected            prometheus.Gauge

	mu       sync.Mutex               // serialises refreshes; guards below
	good     map[string]campaign.Spec // last good spec by campaign id
	rejected map[string]string        // bad rows of the last read: id -> spec as read
	problems map[string][]string      // and their problems
	lastErr  string                   // last logged read error

	stop      chan struct{}
	kick      chan struct{} // a notification: refresh now
	wg        sync.WaitGroup
	closeOnce sync.Once
}

// Open connects to the database of o.DSN, reads the campaigns table once
// (a failed first read is an error: a bidder does not start without
// campaigns), and refreshes every o.Interval until Close.
func Open(ctx context.Context, o Options) (*Source, error) {
	log := o.Logger
	if log == nil {
		log = zap.NewNop()
	}
	cfg, err := pgxpool.ParseConfig(o.DSN)
	if err != nil {
		// The error may quote the DSN, which holds the password.
		return nil, fmt.Errorf("%w: cannot parse the DSN", ErrConnect)
	}
	cfg.MaxConns = 2
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConnect, err)
	}
	s := &Source{pool: pool, log: log, interval: o.Interval, good: map[string]campaign.Spec{},
		stop: make(chan struct{}), kick: make(chan struct{}, 1)}
	if err := s.metrics(o.Registerer); err != nil {
		pool.Close()
		return nil, err
	}
	if err := s.Refresh(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	if s.interval > 0 {
		s.wg.Add(2)
		go s.loop()
		go s.listen()
	}
	return s, nil
}

func (s *Source) metrics(reg prometheus.Registerer) error {
	refreshes := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "rtbd_campaign_refreshes_total",
		Help: "Reads of the campaigns table, by result (ok, or failed: current campaigns kept).",
	}, []string{"result"})
	gauge := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "rtbd_campaigns",
		Help: "Campaigns in the current campaign set, by status.",
	}, []string{"state"})
	rejected := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "rtbd_campaigns_rejected_rows",
		Help: "Rows of the campaigns table rejected at the last read (each keeps its last good version, if any).",
	})
	if reg != nil {
		for _, c := range []prometheus.Collector{refreshes, gauge, rejected} {
			if err := reg.Register(c); err != nil {
				return fmt.Errorf("pgsource: metrics: %w", err)
			}
		}
	}
	s.refreshOK, s.refreshFailed = refreshes.WithLabelValues("ok"), refreshes.WithLabelValues("failed")
	s.gaugeActive, s.gaugePaused = gauge.WithLabelValues(campaign.StatusActive), gauge.WithLabelValues(campaign.StatusPaused)
	s.gaugeRejected = rejected
	return nil
}

// Current returns the current Set (never nil after Open).
func (s *Source) Current() *campaign.Set { return s.cur.Load() }

// Rejected returns the problems of each row rejected at the last read, by
// campaign id (each problem starts with its field, "bid_cpm: ...").
func (s *Source) Rejected() map[string][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string][]string, len(s.problems))
	for id, p := range s.problems {
		out[id] = slices.Clone(p)
	}
	return out
}

// Close stops the refreshes and closes the connections; Current keeps
// returning the last Set. Idempotent.
func (s *Source) Close() error {
	s.closeOnce.Do(func() {
		close(s.stop)
		s.wg.Wait()
		s.pool.Close()
	})
	return nil
}

// refreshTimeout bounds a background refresh.
const refreshTimeout = 30 * time.Second

func (s *Source) loop() {
	defer s.wg.Done()
	t := time.NewTicker(s.interval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		case <-s.kick:
		}
		ctx, cancel := context.WithTimeout(context.Background(), min(s.interval, refreshTimeout))
		_ = s.Refresh(ctx) // logged and counted
		cancel()
	}
}

// listen LISTENs on Channel (the table's trigger NOTIFYs it at every
// change) and kicks a refresh at each notification. The polling stays: a
// lost connection is retried every interval, and notifications missed
// meanwhile are caught by the next refresh.
func (s *Source) listen() {
	defer s.wg.Done()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-s.stop
		cancel()
	}()
	for ctx.Err() == nil {
		err := s.listenOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		s.log.Warn("campaign: LISTEN on the campaigns table failed; polling only until it is back",
			zap.String("channel", Channel), zap.Error(err))
		select {
		case <-ctx.Done():
			return
		case <-time.After(s.interval):
		}
	}
}

func (s *Source) listenOnce(ctx context.Context) error {
	pc, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	// A connection of its own, closed after: a LISTENing connection must not
	// go back to the pool.
	conn := pc.Hijack()
	defer conn.Close(context.Background()) //nolint:errcheck // closing
	if _, err := conn.Exec(ctx, "LISTEN "+Channel); err != nil {
		return err
	}
	for {
		if _, err := conn.WaitForNotification(ctx); err != nil {
			return err
		}
		select {
		case s.kick <- struct{}{}:
		default: // a refresh is already due
		}
	}
}

// row is one row of the campaigns table.
type row struct {
	id      string
	enabled bool
	updated time.Time
	spec    []byte
}

// read reads the whole table in one REPEATABLE READ read-only transaction.
func (s *Source) read(ctx context.Context) ([]row, error) {
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, err
	}
	defer tx.Rollback(ctx) //nolint:errcheck // read-only; after Commit a no-op
	rs, err := tx.Query(ctx, "SELECT id, enabled, updated_at, spec::text FROM "+Table+" ORDER BY id")
	if err != nil {
		return nil, err
	}
	var out []row
	for rs.Next() {
		var r row
		var spec string
		if err := rs.Scan(&r.id, &r.enabled, &r.updated, &spec); err != nil {
			rs.Close()
			return nil, err
		}
		r.spec = []byte(spec)
		out = append(out, r)
	}
	if err := rs.Err(); err != nil {
		return nil, err
	}
	return out, tx.Commit(ctx)
}

// Refresh reads the table now and installs its campaigns: enabled good
// rows as they are, bad rows as their last good version (or not at all).
// It fails, keeping the current Set, only when the table cannot be read.
func (s *Source) Refresh(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	rows, err := s.read(ctx)
	if err != nil {
		s.refreshFailed.Inc()
		err = fmt.Errorf("%w %s: %w", ErrRead, Table, err)
		if msg := err.Error(); msg != s.lastErr {
			s.lastErr = msg
			s.log.Error("campaign: cannot read the campaigns table; keeping the current campaigns", zap.Error(err))
		}
		return err
	}
	s.lastErr = ""
	good := make(map[string]campaign.Spec, len(rows))
	rejected := map[string]string{}
	problems := map[string][]string{}
	for _, r := range rows {
		if !r.enabled {
			continue
		}
		spec, probs := check(r)
		if probs == nil {
			good[r.id] = spec
			continue
		}
		rejected[r.id], problems[r.id] = string(r.spec), probs
		old, kept := s.good[r.id]
		if kept {
			good[r.id] = old
		}
		if prev, seen := s.rejected[r.id]; !seen || prev != string(r.spec) {
			msg := "campaign: bad campaign row; leaving the campaign out"
			if kept {
				msg = "campaign: bad campaign row; keeping the campaign's last good version"
			}
			s.log.Error(msg, zap.String("campaign", r.id), zap.Strings("fields", fields(probs)),
				zap.Strings("problems", probs), zap.Time("updated_at", r.updated))
		}
	}
	specs := make([]campaign.Spec, 0, len(good))
	for _, id := range slices.Sorted(maps.Keys(good)) {
		specs = append(specs, good[id])
	}
	set, err := campaign.Compile("postgres table "+Table, specs)
	if err != nil {
		// Each spec compiled alone; the set should too. Keep the current one.
		s.refreshFailed.Inc()
		s.log.Error("campaign: campaigns table rejected as a whole; keeping the current campaigns", zap.Error(err))
		return err
	}
	s.good, s.rejected, s.problems = good, rejected, problems
	s.cur.Store(set)
	a, p := set.Counts()
	s.gaugeActive.Set(float64(a))
	s.gaugePaused.Set(float64(p))
	s.gaugeRejected.Set(float64(len(rejected)))
	s.refreshOK.Inc()
	return nil
}

// check decodes and validates one row alone; nil problems when good.
func check(r row) (campaign.Spec, []string) {
	name := Table + " row " + r.id
	spec, err := campaign.DecodeSpec(r.spec, name)
	if err == nil {
		switch id := strings.TrimSpace(spec.ID); {
		case id == "":
			spec.ID = r.id
		case id != r.id:
			return spec, []string{fmt.Sprintf("id: %q in spec is not the row's id %q", id, r.id)}
		}
		_, err = campaign.Compile(name, []campaign.Spec{spec})
	}
	var ve *campaign.ValidationError
	if errors.As(err, &ve) {
		probs := make([]string, len(ve.Problems))
		for i, p := range ve.Problems {
			probs[i] = strings.TrimPrefix(p, "campaigns[0].")
		}
		return spec, probs
	}
	if err != nil {
		return spec, []string{err.Error()}
	}
	return spec, nil
}

// fields returns the field each problem names ("bid_cpm" of "bid_cpm:
// must be > 0").
func fields(probs []string) []string {
	out := make([]string, 0, len(probs))
	for _, p := range probs {
		if k, _, ok := strings.Cut(p, ": "); ok && !strings.Contains(k, " ") {
			out = append(out, k)
		}
	}
	return out
}
