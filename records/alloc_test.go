//go:build !race

package records

import (
	"testing"
	"time"
)

// TestPutAllocations: handing a record to the sinks allocates nothing.
func TestPutAllocations(t *testing.T) {
	s := &countSink{}
	rec, err := NewRecorder(Options{Instance: "b1", BufferBytes: 64 << 20, FlushInterval: time.Hour}, s, &countSink{})
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	r := sample()
	if a := testing.AllocsPerRun(1000, func() { rec.Put(&r) }); a != 0 {
		t.Errorf("Put: %v allocations, want 0", a)
	}
}
