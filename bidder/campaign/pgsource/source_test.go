package pgsource_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/rtbd/rtbd/bidder/campaign"
	"github.com/rtbd/rtbd/bidder/campaign/pgsource"
	"github.com/rtbd/rtbd/bidder/campaign/pgsource/pgtest"
	"github.com/rtbd/rtbd/bidder/internal/metrictest"
)

// spec is a valid campaign's jsonb document bidding cpm.
func spec(cpm string) string {
	return `{"adomain": ["shop.example"], "product_group_id": 7, "status": "active", "bid_cpm": ` + cpm +
		`, "creative": {"template": "light", "sizes": ["300x250"]}}`
}

func upsert(t *testing.T, pg *pgtest.Server, id string, enabled bool, doc string) {
	t.Helper()
	pg.Exec(t, `INSERT INTO `+pgsource.Table+` (id, enabled, spec) VALUES ($1, $2, $3::jsonb)
		ON CONFLICT (id) DO UPDATE SET enabled = $2, spec = $3::jsonb, updated_at = now()`, id, enabled, doc)
}

// bids returns each campaign's bid in micros, by id.
func bids(s *pgsource.Source) map[string]int64 {
	out := map[string]int64{}
	for _, c := range s.Current().All() {
		out[c.ID] = c.BidCPMMicros
	}
	return out
}

func refresh(t *testing.T, s *pgsource.Source) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
}

func want(t *testing.T, s *pgsource.Source, w map[string]int64) {
	t.Helper()
	if got := bids(s); fmt.Sprint(got) != fmt.Sprint(w) {
		t.Fatalf("campaigns (id: bid micros) = %v, want %v", got, w)
	}
}

// TestSource drives refreshes by hand against a real PostgreSQL: a changed
// row is used after the next refresh, a deleted or disabled row stops its
// campaign, a bad row keeps its last good version (or stays out when new)
// while the others update, logged by campaign and field and counted.
func TestSource(t *testing.T) {
	pg := pgtest.Start(t)
	pg.Exec(t, pgsource.Schema)
	upsert(t, pg, "a", true, spec("1.5"))
	upsert(t, pg, "b", true, spec("2"))
	upsert(t, pg, "c", true, spec("3"))
	upsert(t, pg, "off", false, spec("4"))

	core, logs := observer.New(zap.InfoLevel)
	reg := prometheus.NewRegistry()
	s, err := pgsource.Open(context.Background(), pgsource.Options{DSN: pg.DSN, Logger: zap.New(core), Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	want(t, s, map[string]int64{"a": 1_500_000, "b": 2_000_000, "c": 3_000_000})

	// Changed, deleted, disabled, enabled.
	upsert(t, pg, "a", true, spec("1.75"))
	pg.Exec(t, `DELETE FROM `+pgsource.Table+` WHERE id = 'b'`)
	upsert(t, pg, "c", false, spec("3"))
	upsert(t, pg, "off", true, spec("4"))
	refresh(t, s)
	want(t, s, map[string]int64{"a": 1_750_000, "off": 4_000_000})

	// A bad row keeps its last good version; a bad new row stays out; the
	// others still update.
	upsert(t, pg, "a", true, strings.Replace(spec("0"), `"bid_cpm": 0`, `"bid_cpm": -1`, 1))
	upsert(t, pg, "new", true, `{"adomain": ["shop.example"], "bid_cmp": 1}`)
	upsert(t, pg, "off", true, spec("4.25"))
	upsert(t, pg, "other", true, strings.Replace(spec("1"), `"status": "active"`, `"id": "not-other", "status": "active"`, 1))
	refresh(t, s)
	want(t, s, map[string]int64{"a": 1_750_000, "off": 4_250_000})
	rej := s.Rejected()
	if len(rej) != 3 || !hasPrefix(rej["a"], "bid_cpm: must be > 0") || !hasPrefix(rej["new"], `bid_cmp: unknown key (did you mean "bid_cpm"?)`) ||
		!hasPrefix(rej["other"], `id: "not-other" in spec is not the row's id "other"`) {
		t.Fatalf("Rejected() = %q", rej)
	}
	if got := metrictest.Must(t, reg, "rtbd_campaigns_rejected_rows"); got != 3 {
		t.Errorf("rtbd_campaigns_rejected_rows = %v, want 3", got)
	}
	for id, field := range map[string]string{"a": "bid_cpm", "new": "bid_cmp", "other": "id"} {
		entries := logs.FilterField(zap.String("campaign", id)).All()
		if len(entries) != 1 || entries[0].Level != zap.ErrorLevel || !slices.Contains(fieldStrings(entries[0], "fields"), field) {
			t.Errorf("log of bad row %s: %v, want one error naming field %s", id, entries, field)
		}
	}
	if e := logs.FilterField(zap.String("campaign", "a")).All(); len(e) == 1 && !strings.Contains(e[0].Message, "last good version") {
		t.Errorf("bad row a logged %q, want it to say the last good version is kept", e[0].Message)
	}
	// An unchanged bad row is not logged again; fixed, it is used.
	refresh(t, s)
	if n := logs.FilterField(zap.String("campaign", "a")).Len(); n != 1 {
		t.Errorf("unchanged bad row logged %d times, want 1", n)
	}
	upsert(t, pg, "a", true, spec("1.8"))
	refresh(t, s)
	want(t, s, map[string]int64{"a": 1_800_000, "off": 4_250_000})
	if got := metrictest.Must(t, reg, "rtbd_campaigns_rejected_rows"); got != 2 {
		t.Errorf("rtbd_campaigns_rejected_rows = %v, want 2", got)
	}
	// A bad row that is deleted or disabled stops: no last good version.
	upsert(t, pg, "a", false, spec("-1"))
	refresh(t, s)
	want(t, s, map[string]int64{"off": 4_250_000})
}

// TestSourceInterval: with an interval the Source refreshes by itself (a
// bounded wait for the change, no timing assertion), and a failed read
// (table gone) keeps the current campaigns.
func TestSourceInterval(t *testing.T) {
	pg := pgtest.Start(t)
	pg.Exec(t, pgsource.Schema)
	upsert(t, pg, "a", true, spec("1"))
	s, err := pgsource.Open(context.Background(), pgsource.Options{DSN: pg.DSN, Interval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	want(t, s, map[string]int64{"a": 1_000_000})
	upsert(t, pg, "a", true, spec("2"))
	waitFor(t, func() bool { return bids(s)["a"] == 2_000_000 })

	pg.Exec(t, `ALTER TABLE `+pgsource.Table+` RENAME TO gone`)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Refresh(ctx); !errors.Is(err, pgsource.ErrRead) {
		t.Fatalf("Refresh without the table: %v, want ErrRead", err)
	}
	want(t, s, map[string]int64{"a": 2_000_000})
}

// TestOpenFails: a bad DSN and an unreachable database are ErrConnect or
// ErrRead, and the error does not show the password.
func TestOpenFails(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, dsn := range []string{"postgres://u:s3cret@127.0.0.1:1/db?sslmode=disable&connect_timeout=2", "postgres://u:s3cret@%zz"} {
		_, err := pgsource.Open(ctx, pgsource.Options{DSN: dsn})
		if !errors.Is(err, pgsource.ErrConnect) && !errors.Is(err, pgsource.ErrRead) {
			t.Errorf("Open(%q) = %v, want ErrConnect or ErrRead", dsn, err)
		}
		if err != nil && strings.Contains(err.Error(), "s3cret") {
			t.Errorf("Open error shows the password: %v", err)
		}
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 30s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func hasPrefix(list []string, p string) bool {
	return slices.ContainsFunc(list, func(s string) bool { return strings.HasPrefix(s, p) })
}

// fieldStrings returns the string list field key of e.
func fieldStrings(e observer.LoggedEntry, key string) []string {
	var out []string
	list, _ := e.ContextMap()[key].([]any)
	for _, v := range list {
		out = append(out, fmt.Sprint(v))
	}
	return out
}

// TestLoad: the campaigns of a file, loaded as rows with Load, are read back
// equal, so the file and the table are the same campaigns.
func TestLoad(t *testing.T) {
	pg := pgtest.Start(t)
	set, specs := pg.LoadFile(t, "../../testdata/campaigns.yaml")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := pgsource.Open(ctx, pgsource.Options{DSN: pg.DSN})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if len(s.Rejected()) != 0 || s.Current().Len() != set.Len() {
		t.Fatalf("read back %d campaigns, rejected %v; want %d", s.Current().Len(), s.Rejected(), set.Len())
	}
	back, err := campaign.Specs(s.Current().All())
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(specs, func(a, b campaign.Spec) int { return strings.Compare(a.ID, b.ID) })
	if !reflect.DeepEqual(back, specs) {
		t.Fatalf("read back\n%+v\nwant\n%+v", back, specs)
	}
}

// TestSourceNotify: with an interval far longer than the test, a change is
// still used, through the trigger's NOTIFY (a bounded wait).
func TestSourceNotify(t *testing.T) {
	pg := pgtest.Start(t)
	pg.Exec(t, pgsource.Schema)
	upsert(t, pg, "a", true, spec("1"))
	s, err := pgsource.Open(context.Background(), pgsource.Options{DSN: pg.DSN, Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// The LISTEN may start after a first change: change until one is seen.
	cpm := 2
	waitFor(t, func() bool {
		if bids(s)["a"] == int64(cpm)*1_000_000 {
			return true
		}
		cpm++
		upsert(t, pg, "a", true, spec(fmt.Sprint(cpm)))
		time.Sleep(50 * time.Millisecond)
		return bids(s)["a"] == int64(cpm)*1_000_000
	})
}
