package catalog_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/proto"

	"github.com/rtbd/rtbd/catalog"
	"github.com/rtbd/rtbd/catalog/catalogpb"
	"github.com/rtbd/rtbd/catalog/catalogtest"
)

func TestCodecRoundTrip(t *testing.T) {
	for _, p := range append(catalogtest.Products(), &catalogpb.Product{ProductId: 1, ProductGroupId: 1}) {
		v := catalog.AppendValue(nil, p)
		var got catalogpb.Product
		if err := catalog.DecodeValue(p.ProductGroupId, p.ProductId, v, &got); err != nil {
			t.Fatal(err)
		}
		if !proto.Equal(&got, p) {
			t.Fatalf("round trip: got %v want %v", &got, p)
		}
		// Every truncation is an error, never a panic.
		for i := 0; i < len(v); i++ {
			if err := catalog.DecodeValue(1, 1, v[:i], &got); !errors.Is(err, catalog.ErrCorrupt) {
				t.Fatalf("truncated at %d: err %v", i, err)
			}
		}
	}
	full := catalogtest.FullProduct()
	enc, pb := len(catalog.AppendValue(nil, full)), proto.Size(full)
	t.Logf("value encoding: %d bytes, protobuf %d bytes (%.0f%%)", enc, pb, 100*float64(enc)/float64(pb))
	if enc >= pb {
		t.Errorf("value encoding (%d B) not smaller than protobuf (%d B)", enc, pb)
	}
}

func FuzzDecodeValue(f *testing.F) {
	for _, p := range catalogtest.Products()[:5] {
		f.Add(catalog.AppendValue(nil, p))
	}
	f.Add(catalog.AppendValue(nil, catalogtest.FullProduct()))
	f.Fuzz(func(t *testing.T, v []byte) {
		var p catalogpb.Product
		if err := catalog.DecodeValue(1, 2, v, &p); err == nil {
			// Whatever decodes must re-encode to the same bytes.
			if got := catalog.AppendValue(nil, &p); string(got) != string(v) && len(v) > 0 && v[0] == 1 {
				// Non-canonical varints can decode; only check canonical input.
				var q catalogpb.Product
				if err := catalog.DecodeValue(1, 2, got, &q); err != nil || !proto.Equal(&p, &q) {
					t.Fatalf("re-encode mismatch")
				}
			}
		}
	})
}

func TestKeys(t *testing.T) {
	k := catalog.AppendKey(nil, 1122, 103)
	g, id, ok := catalog.ParseKey(k)
	if !ok || g != 1122 || id != 103 || len(k) != catalog.KeyLen {
		t.Fatalf("key round trip: %v %d %d %v", k, g, id, ok)
	}
	// Big-endian: a group's products sort together, by id.
	a, b, c := catalog.AppendKey(nil, 1, 255), catalog.AppendKey(nil, 1, 256), catalog.AppendKey(nil, 2, 1)
	if !(string(a) < string(b) && string(b) < string(c)) {
		t.Fatal("keys do not sort by (group, id)")
	}
	lo, hi := catalog.GroupBounds(1)
	if !(string(lo) <= string(a) && string(b) < string(hi) && string(c) >= string(hi)) {
		t.Fatal("group bounds wrong")
	}
}

func buildVersion(t *testing.T, dir string, titleSuffix string) string {
	t.Helper()
	var ps []*catalogpb.Product
	for _, p := range catalogtest.Products() {
		q := proto.Clone(p).(*catalogpb.Product)
		q.Title += titleSuffix
		ps = append(ps, q)
	}
	return catalogtest.WriteCatalog(t, dir, ps)
}

func title(t *testing.T, s catalogtest.Store) string {
	t.Helper()
	r, err := s.GetProductMasters(context.Background(), &catalogpb.ProductMastersRequest{
		ProductGroupId: catalogtest.TalkGroup, Product1QuantityAtMost: 1, Product1Ids: []int64{101}})
	if err != nil || len(r.Product1S) != 1 {
		t.Fatalf("lookup: %v %v", r, err)
	}
	return r.Product1S[0].Title
}

// watchedDir publishes a first version in a new directory and opens it with
// a Local that follows CURRENT every 10 ms (closed at the test's end).
func watchedDir(t *testing.T) (dir, v1 string, l *catalog.Local) {
	t.Helper()
	dir = t.TempDir()
	v1 = buildVersion(t, dir, " v1")
	l, err := catalog.OpenLocal(dir, catalog.LocalOptions{WatchInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return dir, v1, l
}

// gone reports whether version v has left dir's disk.
func gone(dir, v string) func() bool {
	return func() bool {
		_, err := os.Stat(catalog.VersionPath(dir, v))
		return errors.Is(err, os.ErrNotExist)
	}
}

func TestReloadUnderLoadAndRollback(t *testing.T) {
	dir, v1, l := watchedDir(t)
	if !strings.HasSuffix(title(t, l), " v1") {
		t.Fatal("v1 not served")
	}
	var stop atomic.Bool
	var failures, calls atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				r, err := l.GetProductMasters(context.Background(), &catalogpb.ProductMastersRequest{
					ProductGroupId: catalogtest.TalkGroup, Product1QuantityAtMost: 3, Product1Ids: []int64{101, 102, 103}})
				calls.Add(1)
				if err != nil || len(r.Product1S) != 3 {
					failures.Add(1)
				}
			}
		}()
	}
	v2 := buildVersion(t, dir, " v2")
	waitFor(t, func() bool { return l.Version() == v2 })
	v3 := buildVersion(t, dir, " v3")
	waitFor(t, func() bool { return l.Version() == v3 })
	stop.Store(true)
	wg.Wait()
	if failures.Load() != 0 {
		t.Fatalf("%d of %d lookups failed during switches", failures.Load(), calls.Load())
	}
	if !strings.HasSuffix(title(t, l), " v3") {
		t.Fatal("v3 not served after switch")
	}
	// v1 is neither CURRENT nor PREVIOUS and nobody reads it: it goes. Not
	// at once: when v3 was published a worker may still have held v1, so
	// Publish's sweep and the one after the switch skipped it; the watcher
	// sweeps again when the last worker lets go of it.
	waitFor(t, gone(dir, v1))
	lock, err := catalog.LockDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	from, to, err := catalog.Rollback(dir)
	lock.Close()
	if err != nil || from != v3 || to != v2 {
		t.Fatalf("rollback: %s -> %s, %v", from, to, err)
	}
	waitFor(t, func() bool { return l.Version() == v2 })
	if !strings.HasSuffix(title(t, l), " v2") {
		t.Fatal("v2 not served after rollback")
	}
}

// A version retired while a request still reads it leaves the disk when that
// request lets go, not at the next publish (which may be a day away).
func TestRetiredVersionRemovedWhenLastReaderLetsGo(t *testing.T) {
	dir, v1, l := watchedDir(t)
	held, release := catalog.HoldVersion(l)
	if held != v1 {
		t.Fatalf("holding %s, want %s", held, v1)
	}
	v2 := buildVersion(t, dir, " v2")
	waitFor(t, func() bool { return l.Version() == v2 })
	v3 := buildVersion(t, dir, " v3") // v1: neither CURRENT nor PREVIOUS, but read
	waitFor(t, func() bool { return l.Version() == v3 })
	if _, err := os.Stat(catalog.VersionPath(dir, v1)); err != nil {
		t.Fatalf("%s removed while a request reads it: %v", v1, err)
	}
	release()
	waitFor(t, gone(dir, v1))
	if _, err := os.Stat(catalog.VersionPath(dir, v2)); err != nil {
		t.Fatalf("PREVIOUS %s removed: %v", v2, err)
	}
}

// A serving process sweeps without owning the directory: while an ingest
// holds the lock it keeps its hands off (a version in the making is not yet
// named by any pointer), and once the lock is free it removes what no one
// needs, leaving no temporary directory behind.
func TestSweepVersionsKeepsOffWhileLocked(t *testing.T) {
	dir := t.TempDir()
	v1 := buildVersion(t, dir, " v1")
	l, err := catalog.OpenLocal(dir, catalog.LocalOptions{WatchInterval: -1}) // stays on v1
	if err != nil {
		t.Fatal(err)
	}
	buildVersion(t, dir, " v2")
	buildVersion(t, dir, " v3") // v1 is neither CURRENT nor PREVIOUS, but read: kept
	l.Close()
	lock, err := catalog.LockDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	removed, err := catalog.SweepVersions(dir)
	if !errors.Is(err, catalog.ErrLocked) || len(removed) != 0 {
		t.Fatalf("sweep under an ingest's lock: removed %v, %v; want nothing, ErrLocked", removed, err)
	}
	if _, err := os.Stat(catalog.VersionPath(dir, v1)); err != nil {
		t.Fatalf("%s removed under the lock: %v", v1, err)
	}
	lock.Close()
	removed, err = catalog.SweepVersions(dir)
	if err != nil || len(removed) != 1 || removed[0] != v1 {
		t.Fatalf("sweep: removed %v, %v; want [%s]", removed, err, v1)
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "tmp-") {
			t.Errorf("left behind %s", e.Name())
		}
	}
}

// A directory whose LOCK cannot be opened (here: LOCK is a directory; a
// read-only mount does the same) is not swept, and says so.
func TestSweepVersionsUnlockableDir(t *testing.T) {
	dir := t.TempDir()
	v1 := buildVersion(t, dir, " v1")
	l, err := catalog.OpenLocal(dir, catalog.LocalOptions{WatchInterval: -1}) // keeps v1 through v3's publish
	if err != nil {
		t.Fatal(err)
	}
	buildVersion(t, dir, " v2")
	buildVersion(t, dir, " v3")
	l.Close() // v1: unused now, a candidate
	if err := os.Remove(filepath.Join(dir, catalog.LockFile)); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, catalog.LockFile), 0o755); err != nil {
		t.Fatal(err)
	}
	removed, err := catalog.SweepVersions(dir)
	if err == nil || errors.Is(err, catalog.ErrLocked) || !strings.Contains(err.Error(), catalog.LockFile) || len(removed) != 0 {
		t.Fatalf("sweep with an unopenable LOCK: removed %v, %v; want nothing and an error naming LOCK", removed, err)
	}
	if _, err := os.Stat(catalog.VersionPath(dir, v1)); err != nil {
		t.Fatalf("%s removed without the lock: %v", v1, err)
	}
}

// LockDir waits out a short hold (a serving process's sweep) instead of
// failing an ingest.
func TestLockDirWaitsOutAShortHold(t *testing.T) {
	dir := t.TempDir()
	defer func(w time.Duration) { catalog.LockWait = w }(catalog.LockWait)
	catalog.LockWait = time.Minute // the wait is the point here, not its bound
	held, err := catalog.LockDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(50 * time.Millisecond)
		held.Close()
	}()
	l, err := catalog.LockDir(dir)
	if err != nil {
		t.Fatalf("LockDir did not wait for a short hold: %v", err)
	}
	l.Close()
}

// Rollbacks (each under the lock, as rtbd ingest -rollback does) while a
// serving process sweeps in a loop: the rollback target is never taken.
func TestRollbackWhileSweeping(t *testing.T) {
	dir := t.TempDir()
	buildVersion(t, dir, " v1")
	buildVersion(t, dir, " v2")
	var stop atomic.Bool
	var sweeps atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for !stop.Load() {
			catalog.SweepVersions(dir)
			sweeps.Add(1)
			time.Sleep(20 * time.Microsecond) // let LockDir's polls in
		}
	}()
	rollback := func() error {
		lock, err := catalog.LockDir(dir)
		if err != nil {
			return err
		}
		defer lock.Close()
		_, _, err = catalog.Rollback(dir)
		return err
	}
	for i := 0; i < 200; i++ {
		if err := rollback(); err != nil {
			stop.Store(true)
			<-done
			t.Fatalf("rollback %d (after %d sweeps): %v", i, sweeps.Load(), err)
		}
	}
	stop.Store(true)
	<-done
	t.Logf("200 rollbacks, %d sweeps", sweeps.Load())
}

func TestVersionKeptWhileRead(t *testing.T) {
	dir := t.TempDir()
	v1 := buildVersion(t, dir, " v1")
	l, err := catalog.OpenLocal(dir, catalog.LocalOptions{WatchInterval: -1}) // never switches
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	buildVersion(t, dir, " v2")
	buildVersion(t, dir, " v3") // v1 is now neither CURRENT nor PREVIOUS, but l reads it
	if _, err := os.Stat(catalog.VersionPath(dir, v1)); err != nil {
		t.Fatalf("version %s removed while a reader holds it: %v", v1, err)
	}
	if !strings.HasSuffix(title(t, l), " v1") {
		t.Fatal("reader lost its version")
	}
}

func TestLockDir(t *testing.T) {
	dir := t.TempDir()
	l1, err := catalog.LockDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := catalog.LockDir(dir); !errors.Is(err, catalog.ErrLocked) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("second lock: %v, want ErrLocked naming %s", err, dir)
	}
	l1.Close()
	l2, err := catalog.LockDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	l2.Close()
}

func TestOpenLocalBadDirs(t *testing.T) {
	good := t.TempDir()
	catalogtest.WriteFixture(t, good)
	cur, _ := catalog.ReadPointer(good, catalog.CurrentFile)

	corrupt := t.TempDir()
	catalogtest.WriteFixture(t, corrupt)
	name, _ := catalog.ReadPointer(corrupt, catalog.CurrentFile)
	ents, _ := os.ReadDir(catalog.VersionPath(corrupt, name))
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "MANIFEST") {
			os.WriteFile(filepath.Join(catalog.VersionPath(corrupt, name), e.Name()), []byte("garbage"), 0o644)
		}
	}
	dangling := t.TempDir()
	os.WriteFile(filepath.Join(dangling, catalog.CurrentFile), []byte("v20990101T000000.000000000Z\n"), 0o644)
	badPointer := t.TempDir()
	os.WriteFile(filepath.Join(badPointer, catalog.CurrentFile), []byte("../../etc\n"), 0o644)

	for name, dir := range map[string]string{
		"missing dir":      filepath.Join(t.TempDir(), "nope"),
		"empty dir":        t.TempDir(),
		"corrupt manifest": corrupt,
		"dangling CURRENT": dangling,
		"bad CURRENT":      badPointer,
	} {
		_, err := catalog.OpenLocal(dir, catalog.LocalOptions{WatchInterval: -1})
		if err == nil || !strings.Contains(err.Error(), dir) {
			t.Errorf("%s: err %v, want an error naming %s", name, err, dir)
		}
	}
	if l, err := catalog.OpenLocal(good, catalog.LocalOptions{WatchInterval: -1}); err != nil || l.Version() != cur {
		t.Fatalf("good dir: %v", err)
	} else {
		l.Close()
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached within 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestIndexAgeMetric: rtbd_catalog_index_age_seconds is the age of the
// version serving now, read from its name (the time it was built).
func TestIndexAgeMetric(t *testing.T) {
	dir := t.TempDir()
	before := time.Now()
	catalogtest.WriteFixture(t, dir)
	name, _, err := catalog.ReadCurrent(dir)
	if err != nil {
		t.Fatal(err)
	}
	built, ok := catalog.VersionTime(name)
	if !ok || built.Before(before.Add(-time.Second)) || built.After(time.Now()) {
		t.Fatalf("VersionTime(%q) = %v, %v; want a time of this test", name, built, ok)
	}
	if _, ok := catalog.VersionTime("vnot-a-time"); ok {
		t.Fatal("VersionTime accepted a name without a time")
	}
	reg := prometheus.NewRegistry()
	l, err := catalog.OpenLocal(dir, catalog.LocalOptions{Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	time.Sleep(10 * time.Millisecond)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "rtbd_catalog_index_age_seconds" {
			continue
		}
		age := mf.GetMetric()[0].GetGauge().GetValue()
		if max := time.Since(built).Seconds(); age <= 0 || age > max {
			t.Fatalf("index age %v s, want in (0, %v]", age, max)
		}
		return
	}
	t.Fatal("rtbd_catalog_index_age_seconds not exported")
}
