package journal

import (
	"fmt"
	"sync"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

func exported(t *testing.T, j *Journal, after uint64) []string {
	t.Helper()
	var got []string
	if err := j.ReadAfter(after, 1000, func(seq uint64, rec []byte) error {
		got = append(got, string(rec))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return got
}

// TestExportLog: export records are written with their notices, outlive
// the notices' confirmation, survive a reopen, and are deleted only once
// every exporter's cursor has passed them; past MaxExport a notice is
// still written, without its export record.
func TestExportLog(t *testing.T) {
	fs := vfs.NewMem()
	drops := 0
	o := Options{Exporters: []string{"file", "kafka"}, MaxExport: 5, ExportDropped: func() { drops++ }}
	j := open(t, fs, o)
	var seqs []uint64
	for i := range 6 {
		n := notice(i)
		if err := j.AppendExport("c1", &n, []byte(fmt.Sprint("rec", i))); err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, n.Seq)
	}
	if drops != 1 || j.Exports() != 5 || j.Pending() != 6 {
		t.Fatalf("drops %d, exports %d, pending %d: want 1, 5, 6", drops, j.Exports(), j.Pending())
	}
	j.Confirm(seqs) // the store has the notices: the export records stay
	if got := exported(t, j, 0); len(got) != 5 || got[0] != "rec0" || got[4] != "rec4" {
		t.Fatalf("export log %v", got)
	}
	if err := j.Commit("file", seqs[2]); err != nil {
		t.Fatal(err)
	}
	if j.Exports() != 5 {
		t.Fatalf("kafka has not passed them: %d left, want 5", j.Exports())
	}
	if err := j.Commit("kafka", seqs[1]); err != nil {
		t.Fatal(err)
	}
	if got := exported(t, j, 0); len(got) != 3 || got[0] != "rec2" {
		t.Fatalf("after both cursors passed seq %d: %v", seqs[1], got)
	}
	j.Close()

	j = open(t, fs, o)
	if c, err := j.Cursor("file"); err != nil || c != seqs[2] {
		t.Fatalf("file cursor %d, %v after reopen, want %d", c, err, seqs[2])
	}
	if got := exported(t, j, seqs[2]); len(got) != 2 || got[0] != "rec3" {
		t.Fatalf("after reopen, past the file cursor: %v", got)
	}
	if j.Exports() != 3 {
		t.Fatalf("exports counted at open %d, want 3", j.Exports())
	}
	// A dropped (refused) notice takes its export record with it.
	n := notice(9)
	if err := j.AppendExport("c1", &n, []byte("rec9")); err != nil {
		t.Fatal(err)
	}
	j.Drop([]uint64{n.Seq})
	if got := exported(t, j, seqs[4]); len(got) != 0 {
		t.Fatalf("a dropped notice is still exported: %v", got)
	}
	if n.Seq <= seqs[5] {
		t.Fatalf("seq %d reused (last %d)", n.Seq, seqs[5])
	}
}

// TestExportReadsNoFurtherThanAnOpenWrite: a Seq is handed out before its
// batch commits, and batches commit in any order. While the write of Seq
// 1 is held, Seq 2 is written: ReadAfter must not hand Seq 2 over (an
// exporter would commit its cursor past 1 and never export it); once 1 is
// written, both are read, in order.
func TestExportReadsNoFurtherThanAnOpenWrite(t *testing.T) {
	j := open(t, vfs.NewMem(), Options{Exporters: []string{"kafka"}})
	defer j.Close()
	held, release := make(chan struct{}), make(chan struct{})
	var releaseOnce sync.Once
	free := func() { releaseOnce.Do(func() { close(release) }) }
	defer free() // before Close, which waits for the held write
	first := true
	j.testHookWrite = func(uint64) {
		if first { // the first write waits; later ones pass
			first = false
			close(held)
			<-release
		}
	}
	done := make(chan error, 1)
	n1 := notice(1)
	go func() { done <- j.AppendExport("c1", &n1, []byte("rec1")) }()
	<-held
	n2 := notice(2)
	if err := j.AppendExport("c1", &n2, []byte("rec2")); err != nil {
		t.Fatal(err)
	}
	if got := exported(t, j, 0); len(got) != 0 {
		t.Fatalf("with the write of the first Seq open, ReadAfter gave %v: an exporter would pass it", got)
	}
	free()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n1.Seq >= n2.Seq {
		t.Fatalf("seqs %d, %d: want the held write first", n1.Seq, n2.Seq)
	}
	if got := exported(t, j, 0); len(got) != 2 || got[0] != "rec1" || got[1] != "rec2" {
		t.Fatalf("after both writes: %v, want [rec1 rec2]", got)
	}
	if got := exported(t, j, n1.Seq); len(got) != 1 || got[0] != "rec2" {
		t.Fatalf("after seq %d: %v, want [rec2]", n1.Seq, got)
	}
}
