package ingest

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/rtbd/rtbd/catalog"
	"github.com/rtbd/rtbd/catalog/catalogpb"
)

func TestRecordRoundTrip(t *testing.T) {
	key := catalog.AppendKey(nil, 42, 1<<40)
	val := catalog.AppendValue(nil, &catalogpb.Product{Title: "t", Currency: "JPY", InStock: true})
	for _, tc := range []struct {
		seq  uint64
		kind byte
		val  []byte
	}{{0, kindSet, val}, {1 << 62, kindSet, val}, {7, kindDelete, nil}} {
		b := appendRecord(nil, key, tc.seq, tc.kind, tc.val)
		var r rec
		n, err := decodeRecord(b, &r)
		if err != nil || n != len(b) {
			t.Fatalf("decode: %d, %v", n, err)
		}
		if r.g != 42 || r.id != 1<<40 || r.seq != tc.seq || r.kind != tc.kind || !bytes.Equal(r.value, tc.val) || !bytes.Equal(r.key, key) {
			t.Fatalf("round trip: %+v", r)
		}
	}
	bad := [][]byte{
		nil,
		{0x05, 1, 2, 3},
		appendRecord(nil, key, 1, 9, val), // unknown kind
		appendRecord(nil, key, 1, kindDelete, val),                      // delete with a value
		appendRecord(nil, key, 1, kindSet, nil),                         // set without one
		appendRecord(nil, []byte("q0123456789abcdef"), 1, kindSet, val), // not a product key
		{0xff, 0xff, 0xff, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01},
	}
	for i, b := range bad {
		var r rec
		if _, err := decodeRecord(b, &r); !errors.Is(err, errBadRecord) {
			t.Errorf("bad record %d: %v, want errBadRecord", i, err)
		}
	}
}

// TestExternalSort pushes random rows (many duplicates, deletes) through
// arenas, spilled runs, the fan-in reduction, the key-range split and the
// merge, and checks the result against a map: every key once, in order,
// the last row of each key winning, and every dropped row counted.
func TestExternalSort(t *testing.T) {
	dir := t.TempDir()
	j := &job{tmp: dir}
	rng := rand.New(rand.NewPCG(1, 2))
	type want struct {
		seq  uint64
		kind byte
		val  string
	}
	model := map[[2]uint64]want{}
	var runs []*runFile
	a := newArena(40<<10, 40<<10)
	var spilledDups int64
	const rows = 60_000
	for seq := uint64(0); seq < rows; seq++ {
		g, id := uint64(1+rng.IntN(5)), uint64(1+rng.IntN(20_000))
		kind := kindSet
		val := []byte{1, byte(seq), byte(seq >> 8), byte(seq >> 16)}
		if rng.IntN(10) == 0 {
			kind, val = kindDelete, nil
		}
		if !a.room(catalog.KeyLen + 30 + len(val)) {
			a.sort()
			w, err := j.newRunFile()
			if err != nil {
				t.Fatal(err)
			}
			run, dups, err := spill(a, w)
			if err != nil {
				t.Fatal(err)
			}
			runs, spilledDups = append(runs, run), spilledDups+dups
			a = newArena(40<<10, 40<<10)
		}
		a.add(catalog.AppendKey(nil, int64(g), int64(id)), seq, kind, val)
		model[[2]uint64{g, id}] = want{seq, kind, string(val)}
	}
	a.sort()
	if len(runs) <= maxFanIn {
		t.Fatalf("only %d runs: the test must exercise the fan-in reduction", len(runs))
	}
	reduced, err := j.reduceRuns(context.Background(), runs)
	if err != nil {
		t.Fatal(err)
	}
	if len(reduced) > maxFanIn {
		t.Fatalf("%d runs after reduction", len(reduced))
	}
	cuts := splitPoints(reduced, a, 3)
	if len(cuts) != 2 {
		t.Fatalf("cuts %v, want 2", cuts)
	}
	bounds := append([]bound{{}}, cuts...)
	var got []rec
	dups := spilledDups + j.dups.Load()
	for i := range bounds {
		hi := bound{}
		if i+1 < len(bounds) {
			hi = bounds[i+1]
		}
		var srcs []source
		for _, r := range reduced {
			s, err := openFileSource(r, bounds[i], hi)
			if err != nil {
				t.Fatal(err)
			}
			srcs = append(srcs, s)
		}
		srcs = append(srcs, newMemSource(a, bounds[i], hi))
		d, err := mergeSources(context.Background(), srcs, func(r *rec) error {
			c := *r
			c.key, c.value = bytes.Clone(r.key), bytes.Clone(r.value)
			got = append(got, c)
			return nil
		})
		for _, s := range srcs {
			s.close()
		}
		if err != nil {
			t.Fatal(err)
		}
		dups += d
	}
	if len(got) != len(model) {
		t.Fatalf("%d keys merged, want %d", len(got), len(model))
	}
	if dups != rows-int64(len(model)) {
		t.Errorf("%d duplicates counted, want %d", dups, rows-int64(len(model)))
	}
	for i := range got {
		r := &got[i]
		if i > 0 && !got[i-1].less(r) {
			t.Fatalf("record %d out of order", i)
		}
		w := model[[2]uint64{r.g, r.id}]
		if r.seq != w.seq || r.kind != w.kind || string(r.value) != w.val {
			t.Fatalf("key %d/%d: got seq %d kind %d, want the last row, seq %d kind %d", r.g, r.id, r.seq, r.kind, w.seq, w.kind)
		}
	}
}

func TestRunFileCorruption(t *testing.T) {
	dir := t.TempDir()
	j := &job{tmp: dir}
	a := newArena(1<<20, 1<<20)
	for i := range 100 {
		a.add(catalog.AppendKey(nil, 1, int64(i+1)), uint64(i), kindSet, []byte{1, 2, 3})
	}
	a.sort()
	w, _ := j.newRunFile()
	run, _, err := spill(a, w)
	if err != nil {
		t.Fatal(err)
	}
	full, _ := os.ReadFile(run.path)
	for _, cut := range []int{len(full) - 1, len(full) - 9, len(full) / 2, len(runMagic) + 1} {
		if err := os.WriteFile(run.path, full[:cut], 0o600); err != nil {
			t.Fatal(err)
		}
		s, err := openFileSource(run, bound{}, bound{})
		if err != nil {
			continue // detected at open
		}
		n := 0
		for s.next() {
			n++
		}
		s.close()
		if !errors.Is(s.err(), errBadRecord) {
			t.Errorf("run cut at %d of %d bytes: %d records, err %v; want errBadRecord", cut, len(full), n, s.err())
		}
	}
}

// FuzzRunRecord feeds arbitrary bytes to the spill-record decoder, alone
// and as the body of a run file: no panic, and whatever decodes re-encodes
// to a record that decodes the same.
func FuzzRunRecord(f *testing.F) {
	key := catalog.AppendKey(nil, 3, 99)
	val := catalog.AppendValue(nil, &catalogpb.Product{Title: "tee", Currency: "USD", PriceMicros: 1990000})
	f.Add(appendRecord(nil, key, 5, kindSet, val))
	f.Add(appendRecord(nil, key, 1<<40, kindDelete, nil))
	f.Add(append(appendRecord(nil, key, 0, kindSet, val), appendRecord(nil, key, 1, kindDelete, nil)...))
	f.Add([]byte{0})
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Add(binary.LittleEndian.AppendUint32(nil, 1<<30))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		var r rec
		if n, err := decodeRecord(data, &r); err == nil {
			if n <= 0 || n > len(data) {
				t.Fatalf("decoded %d of %d bytes", n, len(data))
			}
			again := appendRecord(nil, r.key, r.seq, r.kind, r.value)
			var r2 rec
			if _, err := decodeRecord(again, &r2); err != nil || r2.g != r.g || r2.id != r.id || r2.seq != r.seq ||
				r2.kind != r.kind || !bytes.Equal(r2.value, r.value) {
				t.Fatalf("re-encoded record differs: %v %+v %+v", err, r, r2)
			}
		}
		// As a run file (magic + data), read whole and from a bound.
		path := filepath.Join(dir, "run")
		if err := os.WriteFile(path, append([]byte(runMagic), data...), 0o600); err != nil {
			t.Fatal(err)
		}
		run := &runFile{path: path, index: []indexEntry{{g: 3, id: 99, off: int64(len(runMagic))}}}
		for _, lo := range []bound{{}, {g: 3, id: 50, ok: true}} {
			s, err := openFileSource(run, lo, bound{})
			if err != nil {
				continue
			}
			for i := 0; s.next(); i++ {
				if i > len(data) {
					t.Fatal("more records than bytes")
				}
			}
			s.close()
		}
	})
}
