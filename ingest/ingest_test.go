package ingest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rtbd/rtbd/catalog"
	"github.com/rtbd/rtbd/catalog/catalogpb"
	"github.com/rtbd/rtbd/ingest/feed"
	"github.com/rtbd/rtbd/ingest/feedgen"
)

// overlapFeeds writes three feeds: products 0..n (CSV), n products again
// from index off on, with other content (JSON Lines, gzip: the later row
// wins), and deletes of the first n/20 ids (CSV with an op column). It
// returns the paths, the catalog they make, and n, off and the deletes.
func overlapFeeds(t *testing.T, dir string) ([]string, expectation, [3]int) {
	n := scaled(20_000)
	off, dels := 7*(n/14), n/20 // off: a multiple of the 7 groups, so ids keep their group
	o1 := testFeedOpts(n, "")
	o2 := feedgen.Options{Products: n, Groups: 7, Seed: 9, OutOfStockRatio: -1, StartID: int64(off + 1), TitleSuffix: " b"}
	f1 := writeFeed(t, dir, "a.csv", o1)
	f2 := writeFeed(t, dir, "b.jsonl.gz", o2)
	var del strings.Builder
	del.WriteString("id,group_id,op\n")
	for i := range dels {
		fmt.Fprintf(&del, "%d,%d,delete\n", i+1, 1+i%7)
	}
	f3 := filepath.Join(dir, "c.csv")
	if err := os.WriteFile(f3, []byte(del.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	e := expectation{n: off + n, groups: 7, want: func(i int) (*catalogpb.Product, bool) {
		switch {
		case i < dels:
			return nil, false
		case i >= off:
			p := feedgen.Product(i-off, o2)
			return &p, true
		}
		p := feedgen.Product(i, o1)
		return &p, true
	}}
	return []string{f1, f2, f3}, e, [3]int{n, off, dels}
}

// TestFullIngest: several feeds (CSV, gzip JSON Lines, deletes) with
// overlapping ids, through the bulk path with a tiny sort buffer (spilled
// runs, a split merge, several tables) and through the batch path: both
// publish exactly the catalog the rows describe, last row winning.
func TestFullIngest(t *testing.T) {
	feeds, want, size := overlapFeeds(t, t.TempDir())
	n, off, dels := int64(size[0]), int64(size[1]), int64(size[2])
	for _, method := range []string{MethodBulk, MethodBatch} {
		t.Run(method, func(t *testing.T) {
			dir := t.TempDir()
			o := testOptions(dir)
			o.Method = method
			sum := mustIngest(t, o, feeds...)
			if sum.RowsRead != 2*n+dels || sum.Accepted != 2*n+dels || sum.Upserts != 2*n || sum.Deletes != dels || sum.RejectedTotal != 0 {
				t.Errorf("summary %+v", sum)
			}
			if sum.Products != off-dels+n || !sum.ProductsExact {
				t.Errorf("products %d (exact %v), want %d", sum.Products, sum.ProductsExact, off-dels+n)
			}
			if method == MethodBulk {
				// n-off ids given twice, dels upserts superseded by deletes.
				if sum.Duplicates != n-off+dels {
					t.Errorf("duplicates %d, want %d", sum.Duplicates, n-off+dels)
				}
				if sum.Runs < 2 || sum.Tables < 2 {
					t.Errorf("runs %d, tables %d: the test should spill and split", sum.Runs, sum.Tables)
				}
			}
			if current(t, dir) != sum.Version {
				t.Errorf("CURRENT %s, want %s", current(t, dir), sum.Version)
			}
			checkDir(t, dir, want)
			if l := leftovers(t, dir); len(l) > 0 {
				t.Errorf("left behind: %v", l)
			}
		})
	}
}

// badFeed builds a CSV feed of good products and the bad rows acceptance
// 3 names, one of each, and returns it with the expected rejects
// (line -> field/reason). extra adds one more bad row.
func badFeed(t *testing.T, good int, extra bool) (string, map[int64]string, feedgen.Options) {
	opts := testFeedOpts(good, "")
	var gen bytes.Buffer
	if _, err := feedgen.Write(&gen, feed.CSV, opts); err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(gen.String(), "\n")
	lines = lines[:len(lines)-1] // after the last "\n"
	ok := func(id, title, w, price string) string {
		return id + ",1," + title + ",,https://img.example.com/p/1/x.jpg," + w + ",600,https://shop.example.com/x," + price + ",,JPY,,,,\n"
	}
	bad := []struct{ row, want string }{
		{"9001,1,Tee,,https://img.example.com/a.jpg,600,600,https://shop.example.com/a,100,,JPY\n", "/wrong_column_count"},
		{ok("9002", "Tee", "6x0", "100"), "width/bad_number"},
		{ok("9003", "Te\xffe", "600", "100"), "title/bad_utf8"},
		{ok("", "Tee", "600", "100"), "id/missing_field"},
		{ok("9005", "Tee", "600", "-100"), "price/negative_price"},
		{ok("9006", strings.Repeat("x", 600), "600", "100"), "title/field_too_long"},
		{ok("9007", "Tee "+strings.Repeat("y", 70_000), "600", "100"), "/line_too_long"},
	}
	if extra {
		bad = append(bad, struct{ row, want string }{ok("9008", "Tee", "600", "1e5"), "price/bad_price"})
	}
	var b strings.Builder
	b.WriteString(lines[0]) // header
	want := map[int64]string{}
	line := int64(1)
	step := (len(lines) - 1) / (len(bad) + 1)
	for i, l := range lines[1:] {
		if i > 0 && i%step == 0 && len(bad) > 0 {
			b.WriteString(bad[0].row)
			line++
			want[line] = bad[0].want
			bad = bad[1:]
		}
		b.WriteString(l)
		line++
	}
	b.WriteString("9009,1,\"Tee never closed,,https://img.example.com/a.jpg,600,600,https://shop.example.com/a,100,,JPY,,,,")
	want[line+1] = "/truncated_line"
	path := filepath.Join(t.TempDir(), "mixed.csv")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, want, opts
}

// TestBadInput: good and bad rows mixed; the bad ones are in
// the reject file with their line, field and reason, and counted; 8 rejects
// in 800 rows is exactly the 1% limit and publishes; one more aborts with
// the live version untouched.
func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	path, want, opts := badFeed(t, 792, false)
	o := testOptions(dir)
	o.MaxRejectRatio = DefaultMaxRejectRatio
	sum := mustIngest(t, o, path)
	if sum.RowsRead != 800 || sum.Accepted != 792 || sum.RejectedTotal != 8 || sum.Products != 792 {
		t.Fatalf("summary: read %d, accepted %d, rejected %d, products %d", sum.RowsRead, sum.Accepted, sum.RejectedTotal, sum.Products)
	}
	for _, r := range []feed.Reason{feed.ReasonWrongColumnCount, feed.ReasonBadNumber, feed.ReasonBadUTF8,
		feed.ReasonMissingField, feed.ReasonNegativePrice, feed.ReasonFieldTooLong, feed.ReasonLineTooLong, feed.ReasonTruncatedLine} {
		if sum.Rejected[r] != 1 {
			t.Errorf("rejected %s: %d, want 1 (all: %v)", r, sum.Rejected[r], sum.Rejected)
		}
	}
	checkRejectFile(t, sum.RejectFile, path, want)
	checkDir(t, dir, feedExpect(opts))
	live := current(t, dir)

	// One over: 9 of 801.
	path2, _, _ := badFeed(t, 792, true)
	var out bytes.Buffer
	err := Main(context.Background(), []string{"-data", dir, "-progress", "none", path2}, &out, io.Discard)
	if !errors.Is(err, ErrAborted) {
		t.Fatalf("ingest over the limit: %v, want ErrAborted", err)
	}
	rejectFile := filepath.Join(dir, "rejects-") // names the reject file and the top reasons
	for _, s := range []string{"9 of 801 rows rejected", "-max-reject-ratio 0.01", rejectFile, "bad_number 1"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("abort message %q does not say %q", err, s)
		}
	}
	if !strings.Contains(out.String(), "NOT published") {
		t.Errorf("summary of the aborted run:\n%s", out.String())
	}
	if current(t, dir) != live {
		t.Fatalf("CURRENT changed to %s by an aborted ingest", current(t, dir))
	}
	checkDir(t, dir, feedExpect(opts))
	if l := leftovers(t, dir); len(l) > 0 {
		t.Errorf("aborted ingest left %v", l)
	}
}

func checkRejectFile(t *testing.T, rejectFile, feedPath string, want map[int64]string) {
	t.Helper()
	b, err := os.ReadFile(rejectFile)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if lines[0]+"\n" != rejectHeader {
		t.Errorf("reject file header %q", lines[0])
	}
	got := map[int64]string{}
	for _, l := range lines[1:] {
		f := strings.Split(l, "\t")
		if len(f) != 6 {
			t.Fatalf("reject line %q: %d fields", l, len(f))
		}
		n, _ := strconv.ParseInt(f[1], 10, 64)
		got[n] = f[2] + "/" + f[3]
		if f[0] != feedPath {
			t.Errorf("reject line names file %q", f[0])
		}
		raw, err := strconv.Unquote(f[5])
		if err != nil || len(raw) == 0 || len(raw) > feed.DefaultMaxRawInReject {
			t.Errorf("reject line %d: raw %d bytes, %v", n, len(raw), err)
		}
		if _, err := strconv.Unquote(f[4]); err != nil || f[4] == `""` {
			t.Errorf("reject line %d: detail %s", n, f[4])
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("rejects (line: field/reason)\n got %v\nwant %v", got, want)
	}
}

// TestEmptyFeedAborts: a full snapshot without products must not wipe the
// catalog.
func TestEmptyFeedAborts(t *testing.T) {
	dir := t.TempDir()
	f := writeFeed(t, t.TempDir(), "one.csv", testFeedOpts(50, ""))
	mustIngest(t, testOptions(dir), f)
	live := current(t, dir)
	empty := filepath.Join(t.TempDir(), "empty.csv")
	os.WriteFile(empty, []byte(feedgen.Header), 0o644)
	_, err := Run(context.Background(), testOptions(dir), []string{empty}, nil)
	if !errors.Is(err, ErrAborted) || !strings.Contains(err.Error(), "empty catalog") {
		t.Fatalf("empty feed: %v", err)
	}
	if current(t, dir) != live {
		t.Fatal("CURRENT changed")
	}

	// An empty delta is a normal night without changes: success, nothing
	// published, PREVIOUS kept.
	o := testOptions(dir)
	o.Delta = true
	sum, err := Run(context.Background(), o, []string{empty}, nil)
	if err != nil || !sum.Unchanged || sum.Version != live || current(t, dir) != live {
		t.Fatalf("empty delta: %v, %+v, CURRENT %s", err, sum, current(t, dir))
	}
	if l := leftovers(t, dir); len(l) > 0 {
		t.Errorf("empty delta left %v", l)
	}
}

// TestRejectFileUnwritable: rejects that cannot be recorded abort the run.
func TestRejectFileUnwritable(t *testing.T) {
	dir := t.TempDir()
	path, _, _ := badFeed(t, 792, false)
	o := testOptions(dir)
	o.RejectFile = filepath.Join(dir, "no-such-dir", "rejects.tsv")
	_, err := Run(context.Background(), o, []string{path}, nil)
	if !errors.Is(err, ErrAborted) || !strings.Contains(err.Error(), o.RejectFile) {
		t.Fatalf("unwritable reject file: %v", err)
	}
	if _, err := catalog.ReadPointer(dir, catalog.CurrentFile); !errors.Is(err, catalog.ErrNoVersion) {
		t.Fatalf("something was published: %v", err)
	}
}

// TestDelta (small): upserts of existing products, new
// products and deletes, from three files, applied to a copy of the live
// version; a reader checking a set of ids sees all of the delta or none.
func TestDelta(t *testing.T) {
	dir := t.TempDir()
	src := t.TempDir()
	n := scaled(20_000)
	nUpd, delFrom, nDel, nAdd := n/20, n/2, n/20, n*7/200
	base := testFeedOpts(n, "")
	mustIngest(t, testOptions(dir), writeFeed(t, src, "base.csv", base))
	baseVersion := current(t, dir)
	baseFiles := snapshotDir(t, catalog.VersionPath(dir, baseVersion))

	upd := testFeedOpts(nUpd, " v2") // the first products again, new titles
	add := feedgen.Options{Products: nAdd, Groups: 7, Seed: 5, OutOfStockRatio: -1, StartID: 1_000_001}
	var del strings.Builder
	for i := delFrom; i < delFrom+nDel; i++ {
		fmt.Fprintf(&del, "{\"id\":%d,\"group_id\":%d,\"deleted\":true}\n", i+1, 1+i%7)
	}
	fmt.Fprintf(&del, "{\"id\":%d,\"group_id\":1,\"op\":\"delete\"}\n", 999_999) // absent
	delPath := filepath.Join(src, "del.jsonl")
	os.WriteFile(delPath, []byte(del.String()), 0o644)
	feeds := []string{writeFeed(t, src, "upd.csv", upd), writeFeed(t, src, "add.csv.gz", add), delPath}

	// The reader: one request per group asking for an updated, a deleted
	// and an added product; each answer must be all old or all new.
	l, err := catalog.OpenLocal(dir, catalog.LocalOptions{WatchInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	stop := make(chan struct{})
	type result struct {
		olds, news int
		err        error
	}
	res := make(chan result, 1)
	go func() {
		var r result
		defer func() { res <- r }()
		for k := 0; ; k++ {
			select {
			case <-stop:
				return
			default:
			}
			g := k % 7 // products i with i%7 == g are in group g+1, id i+1
			updated := int64(g + 1)
			deleted := int64(delFrom + (g+7-delFrom%7)%7 + 1)
			added := int64(1_000_001 + g)
			resp, err := l.GetProductMasters(context.Background(), &catalogpb.ProductMastersRequest{ProductGroupId: int64(g + 1),
				Product1Ids: []int64{updated, deleted, added}, Product1QuantityAtMost: 3})
			if err != nil {
				r.err = err
				return
			}
			ps := resp.Product1S
			switch {
			case len(ps) == 2 && ps[0].ProductId == updated && !strings.HasSuffix(ps[0].Title, " v2") && ps[1].ProductId == deleted:
				r.olds++
			case len(ps) == 2 && ps[0].ProductId == updated && strings.HasSuffix(ps[0].Title, " v2") && ps[1].ProductId == added:
				r.news++
			default:
				r.err = fmt.Errorf("half-applied delta seen in group %d: %v", g+1, ps)
				return
			}
			if r.news >= 200 {
				return
			}
		}
	}()
	o := testOptions(dir)
	o.Delta = true
	sum := mustIngest(t, o, feeds...)
	var r result
	select {
	case r = <-res:
	case <-time.After(20 * time.Second):
		close(stop)
		r = <-res
	}
	if r.err != nil {
		t.Fatalf("%v\nsummary %+v", r.err, sum)
	}
	if r.olds == 0 || r.news < 200 {
		t.Fatalf("reader saw %d old and %d new answers; want both (the new within 20s)", r.olds, r.news)
	}
	if sum.Base != baseVersion || sum.Inserted != int64(nAdd) || sum.Updated != int64(nUpd) || sum.Removed != int64(nDel) || sum.DeletedAbsent != 1 {
		t.Errorf("delta summary %+v", sum)
	}
	if want := int64(n + nAdd - nDel); sum.Products != want || !sum.ProductsExact {
		t.Errorf("products %d (exact %v), want %d", sum.Products, sum.ProductsExact, want)
	}
	checkDir(t, dir, expectation{n: n, groups: 7, want: func(i int) (*catalogpb.Product, bool) {
		switch {
		case i < nUpd:
			p := feedgen.Product(i, upd)
			return &p, true
		case i >= delFrom && i < delFrom+nDel:
			return nil, false
		}
		p := feedgen.Product(i, base)
		return &p, true
	}})
	// The added products (ids 1000001.., group 1+i%7).
	l2, err := catalog.OpenLocal(dir, catalog.LocalOptions{WatchInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	for i := range nAdd {
		p := feedgen.Product(i, add)
		resp, err := l2.GetProductMasters(context.Background(), &catalogpb.ProductMastersRequest{ProductGroupId: p.ProductGroupId,
			Product1Ids: []int64{p.ProductId}, Product1QuantityAtMost: 1})
		if err != nil || len(resp.Product1S) != 1 || resp.Product1S[0].Title != p.Title {
			t.Fatalf("added product %d: %v %v", p.ProductId, resp, err)
		}
	}
	// The base version is untouched: not a file of it written to (its
	// tables are shared by hard links), still PREVIOUS, still the old
	// catalog.
	if after := snapshotDir(t, catalog.VersionPath(dir, baseVersion)); fmt.Sprint(after) != fmt.Sprint(baseFiles) {
		t.Errorf("the delta changed its base version's files:\nbefore %v\nafter  %v", baseFiles, after)
	}
	if prev, _ := catalog.ReadPointer(dir, catalog.PreviousFile); prev != baseVersion {
		t.Fatalf("PREVIOUS %s, want %s", prev, baseVersion)
	}
	lock, err := catalog.LockDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = catalog.Rollback(dir)
	lock.Close()
	if err != nil {
		t.Fatal(err)
	}
	checkDir(t, dir, feedExpect(base))
}

// TestDeltaNeedsLiveVersion: -delta on an empty data dir is refused.
func TestDeltaNeedsLiveVersion(t *testing.T) {
	o := testOptions(t.TempDir())
	o.Delta = true
	_, err := Run(context.Background(), o, []string{writeFeed(t, t.TempDir(), "x.csv", testFeedOpts(10, ""))}, nil)
	if !errors.Is(err, ErrAborted) || !errors.Is(err, catalog.ErrNoVersion) {
		t.Fatalf("delta without a live version: %v", err)
	}
}

// TestSecondIngestFailsFast: while an ingest runs (here: waiting on its
// standard input) another one on the same dir fails (after LockWait), naming the
// lock file, and the first one completes.
func TestSecondIngestFailsFast(t *testing.T) {
	dir := t.TempDir()
	var pw *io.PipeWriter
	first := make(chan error, 1)
	o := testOptions(dir)
	o.Format = "csv"
	start := func() {
		var pr *io.PipeReader
		pr, pw = io.Pipe()
		go func() {
			_, err := Run(context.Background(), o, []string{"-"}, pr)
			first <- err
		}()
	}
	start()
	// Wait (bounded) until the first ingest holds the lock. The probe
	// takes the lock itself for a moment: when the first ingest tries it
	// in that moment, it fails fast with ErrLocked (what this test is
	// about) and is started again.
	deadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case err := <-first:
			if !errors.Is(err, catalog.ErrLocked) {
				t.Fatalf("the first ingest ended before its input: %v", err)
			}
			start()
		default:
		}
		l, err := catalog.LockDir(dir)
		if errors.Is(err, catalog.ErrLocked) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		l.Close()
		if time.Now().After(deadline) {
			t.Fatal("the first ingest never took the lock")
		}
		time.Sleep(5 * time.Millisecond)
	}
	f := writeFeed(t, t.TempDir(), "f.csv", testFeedOpts(100, ""))
	err := Main(context.Background(), []string{"-data", dir, "-progress", "none", f}, io.Discard, io.Discard)
	if !errors.Is(err, catalog.ErrLocked) || !errors.Is(err, ErrAborted) || !strings.Contains(err.Error(), filepath.Join(dir, catalog.LockFile)) {
		t.Fatalf("second ingest: %v; want ErrLocked naming %s", err, filepath.Join(dir, catalog.LockFile))
	}
	err = Main(context.Background(), []string{"-data", dir, "-rollback"}, io.Discard, io.Discard)
	if !errors.Is(err, catalog.ErrLocked) {
		t.Fatalf("rollback during an ingest: %v; want ErrLocked", err)
	}
	opts := testFeedOpts(300, "")
	go func() {
		feedgen.Write(pw, feed.CSV, opts)
		pw.Close()
	}()
	select {
	case err := <-first:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the first ingest did not finish")
	}
	checkDir(t, dir, feedExpect(opts))
}

// TestRollback: -rollback switches CURRENT back and forth between the last
// two versions, printing from -> to; readers see the old catalog again.
func TestRollback(t *testing.T) {
	dir, src := t.TempDir(), t.TempDir()
	o1, o2 := testFeedOpts(500, ""), testFeedOpts(500, " v2")
	v1 := mustIngest(t, testOptions(dir), writeFeed(t, src, "1.csv", o1)).Version
	v2 := mustIngest(t, testOptions(dir), writeFeed(t, src, "2.csv", o2)).Version
	var out bytes.Buffer
	if err := Main(context.Background(), []string{"-data", dir, "-rollback"}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), v2+" -> "+v1) || current(t, dir) != v1 {
		t.Fatalf("rollback said %q; CURRENT %s", out.String(), current(t, dir))
	}
	checkDir(t, dir, feedExpect(o1))
	out.Reset()
	if err := Main(context.Background(), []string{"-data", dir, "-rollback"}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if current(t, dir) != v2 {
		t.Fatalf("second rollback: CURRENT %s, want %s", current(t, dir), v2)
	}
	checkDir(t, dir, feedExpect(o2))

	fresh := t.TempDir()
	mustIngest(t, testOptions(fresh), writeFeed(t, src, "3.csv", o1))
	if err := Main(context.Background(), []string{"-data", fresh, "-rollback"}, io.Discard, io.Discard); err == nil || errors.Is(err, ErrUsage) {
		t.Fatalf("rollback without PREVIOUS: %v", err)
	}
}

// TestUsageErrors: bad command lines are ErrUsage (exit 2) with the
// problem named, before anything is touched.
func TestUsageErrors(t *testing.T) {
	dir := t.TempDir()
	f := writeFeed(t, t.TempDir(), "f.csv", testFeedOpts(10, ""))
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"-data", dir}, "no feed"},
		{[]string{"-data", dir, "-method", "fast", f}, "-method"},
		{[]string{"-data", dir, "-"}, "-format"},
		{[]string{"-data", dir, "feed.txt"}, "feed.txt"},
		{[]string{"-data", dir, "-max-memory", "lots", f}, "bad size"},
		{[]string{"-data", dir, "-sort-mem", "900MiB", f}, "-sort-mem"},
		{[]string{"-data", dir, "-max-reject-ratio", "2", f}, "-max-reject-ratio"},
		{[]string{"-data", dir, "-rollback", f}, "-rollback"},
		{[]string{"-data", dir, "-progress", "fancy", f}, "-progress"},
	} {
		err := Main(context.Background(), tc.args, io.Discard, io.Discard)
		if !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%v: %v; want ErrUsage saying %q", tc.args, err, tc.says)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) > 0 {
		t.Errorf("usage errors touched the data dir: %v", ents)
	}
	var u bytes.Buffer
	Usage(&u)
	for _, s := range []string{"Exit codes: 0", "1 aborted", "2 usage", "-delta", "-rollback", "-max-reject-ratio", "-max-memory", "-method"} {
		if !strings.Contains(u.String(), s) {
			t.Errorf("usage does not mention %q", s)
		}
	}
}

// TestSummaryAndLogs: the summary names what the issue asks for, and
// without a terminal progress goes to structured log lines.
func TestSummaryAndLogs(t *testing.T) {
	dir := t.TempDir()
	path, _, _ := badFeed(t, 792, false)
	var out bytes.Buffer
	logs := &syncBuffer{}
	err := Main(context.Background(), []string{"-data", dir, "-log-interval", "1ms", "-sort-mem", "1MiB", path}, &out, logs)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"rows read     800", "accepted      792", "rejected      8", "negative_price", "duplicates    0",
		"products      792", "index version generation 1, content hash ", "rows/s", "MB/s", "rejected rows in " + filepath.Join(dir, "rejects-")} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("summary lacks %q:\n%s", s, out.String())
		}
	}
	for _, s := range []string{`"msg":"ingest started"`, `"msg":"ingest progress"`, `"rows_per_s"`, `"msg":"ingest done"`} {
		if !strings.Contains(logs.String(), s) {
			t.Errorf("logs lack %s:\n%s", s, logs.String())
		}
	}
}

func TestByteSizeFlag(t *testing.T) {
	for in, want := range map[string]int64{"1GiB": 1 << 30, "512MiB": 512 << 20, "64k": 64 << 10, "1048576": 1 << 20, "2 G": 2 << 30} {
		var b byteSize
		if err := b.Set(in); err != nil || int64(b) != want {
			t.Errorf("%q: %d, %v; want %d", in, b, err, want)
		}
	}
	for _, in := range []string{"", "-1MiB", "1.5GiB", "lots", "99999999999GiB"} {
		var b byteSize
		if err := b.Set(in); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
	b := byteSize(256 << 20)
	if b.String() != "256MiB" {
		t.Errorf("String %q", b.String())
	}
}

func TestTopReasons(t *testing.T) {
	got := topReasons(map[feed.Reason]int64{"a": 1, "b": 5, "c": 5, "d": 2}, 3)
	if strings.Join(got, ",") != "b 5,c 5,d 2" {
		t.Fatalf("%v", got)
	}
}

// snapshotDir lists a version dir's files with size and modification time
// (readers' and Pebble's lock files aside).
func snapshotDir(t *testing.T, dir string) map[string]string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, e := range ents {
		if e.Name() == "READERS" || e.Name() == "LOCK" {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		m[e.Name()] = fmt.Sprintf("%d@%d", fi.Size(), fi.ModTime().UnixNano())
	}
	return m
}
