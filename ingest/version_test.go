package ingest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rtbd/rtbd/catalog"
)

func indexVersion(t *testing.T, dir string) (catalog.IndexVersion, *catalog.Local) {
	t.Helper()
	l, err := catalog.OpenLocal(dir, catalog.LocalOptions{WatchInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l.IndexVersion(), l
}

// The content hash depends on the products alone: the same feed ingested
// by either method, with or without superseded duplicates, gives the same
// hash; so does the same delta.
func TestVersionHashAcrossMethods(t *testing.T) {
	src := t.TempDir()
	n := scaled(3000)
	old := writeFeed(t, src, "old.csv", testFeedOpts(n, " old"))
	cur := writeFeed(t, src, "new.csv", testFeedOpts(n, ""))
	type run struct {
		method string
		feeds  []string
	}
	runs := []run{{MethodBulk, []string{cur}}, {MethodBatch, []string{cur}},
		{MethodBulk, []string{old, cur}}, {MethodBatch, []string{old, cur}}}
	dirs := make([]string, len(runs))
	var want uint64
	for i, r := range runs {
		dirs[i] = t.TempDir()
		o := testOptions(dirs[i])
		o.Method = r.method
		sum := mustIngest(t, o, r.feeds...)
		iv, _ := indexVersion(t, dirs[i])
		if iv.ContentHash == 0 || iv.ContentHash != sum.ContentHash || iv.Generation != 1 || sum.Generation != 1 {
			t.Fatalf("%s %d feed(s): served %+v, summary hash %x generation %d", r.method, len(r.feeds), iv, sum.ContentHash, sum.Generation)
		}
		if i == 0 {
			want = iv.ContentHash
		} else if iv.ContentHash != want {
			t.Errorf("%s of %d feed(s): hash %x, want %x (bulk of the feed)", r.method, len(r.feeds), iv.ContentHash, want)
		}
	}
	oldDir := t.TempDir()
	mustIngest(t, testOptions(oldDir), old)
	if iv, _ := indexVersion(t, oldDir); iv.ContentHash == want {
		t.Errorf("other products, same hash %x", want)
	}

	// One delta applied by both methods: same hash, same changes.
	nUpd, nDel := n/10, n/20
	upd := writeFeed(t, src, "upd.csv", testFeedOpts(nUpd, " v2"))
	var del strings.Builder
	for i := n / 2; i < n/2+nDel; i++ {
		fmt.Fprintf(&del, "{\"id\":%d,\"group_id\":%d,\"deleted\":true}\n", i+1, 1+i%7)
	}
	fmt.Fprintf(&del, "{\"id\":%d,\"group_id\":1,\"op\":\"delete\"}\n", 999_999) // absent: no change
	delPath := filepath.Join(src, "del.jsonl")
	if err := os.WriteFile(delPath, []byte(del.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	// The first 5 products as the base holds them, after upd: no change.
	same := writeFeed(t, src, "same.csv", testFeedOpts(5, ""))
	var hashes []uint64
	for i, method := range []string{MethodBulk, MethodBatch} {
		before, _ := indexVersion(t, dirs[i])
		o := testOptions(dirs[i])
		o.Method, o.Delta = method, true
		sum := mustIngest(t, o, upd, delPath, same)
		iv, l := indexVersion(t, dirs[i])
		if iv.Generation != 2 || sum.Generation != 2 || iv.ContentHash != sum.ContentHash {
			t.Errorf("delta by %s: served %+v, summary %d %x", method, iv, sum.Generation, sum.ContentHash)
		}
		if sum.ChangedKeys != nUpd-5+nDel {
			t.Errorf("delta by %s: %d keys changed, want %d (updates and removals, not the absent delete nor identical upserts)", method, sum.ChangedKeys, nUpd-5+nDel)
		}
		c, err := l.Changes(before)
		if err != nil || c.Full || len(c.Keys) != nUpd-5+nDel {
			t.Errorf("delta by %s: changes since its base: full %v, %d keys, %v", method, c.Full, len(c.Keys), err)
		}
		hashes = append(hashes, iv.ContentHash)
	}
	if hashes[0] != hashes[1] {
		t.Errorf("delta hashes differ by method: %x", hashes)
	}
	// A full snapshot of the delta's result has the delta's hash.
	full := t.TempDir()
	mustIngest(t, testOptions(full), cur, upd, delPath, same)
	if iv, _ := indexVersion(t, full); iv.ContentHash != hashes[0] {
		t.Errorf("full snapshot of the delta's content: hash %x, delta's %x", iv.ContentHash, hashes[0])
	}

	// Rollback is a publish too: generation 3, v1's hash, and it says so.
	var out bytes.Buffer
	if err := Main(context.Background(), []string{"-data", dirs[0], "-rollback"}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	iv, l := indexVersion(t, dirs[0])
	if iv.Generation != 3 || iv.ContentHash != want || !strings.Contains(out.String(), "generation 3") {
		t.Errorf("after rollback: %+v (want generation 3, hash %x); said %q", iv, want, out.String())
	}
	if c, _ := l.Changes(catalog.IndexVersion{ContentHash: hashes[0]}); !c.Full {
		t.Errorf("changes since the rolled-back delta: %+v, want full", c)
	}
}
