package records

import "sync"

// buffer is a sink's bounded hand-off: records are appended in their
// binary form to the current chunk under a mutex; a full chunk goes to the
// sink's goroutine, which returns it to the free list once written. Memory
// is fixed at start (chunks x chunk bytes); when no chunk is free the
// record is dropped. put allocates nothing.
type buffer struct {
	mu   sync.Mutex
	cur  []byte
	free chan []byte
	full chan []byte
}

// chunkBytes is the size of one chunk (the last chunk of a small buffer
// may be smaller).
const chunkBytes = 256 << 10

func newBuffer(total int) *buffer {
	size := min(chunkBytes, max(total/2, 4<<10))
	n := max(2, total/size)
	b := &buffer{free: make(chan []byte, n), full: make(chan []byte, n)}
	for range n {
		b.free <- make([]byte, 0, size)
	}
	return b
}

// put appends r (BinarySize size) and reports whether there was room.
func (b *buffer) put(r *Record, size int) bool {
	b.mu.Lock()
	if b.cur != nil && cap(b.cur)-len(b.cur) < size {
		b.full <- b.cur // never blocks: there are as many slots as chunks
		b.cur = nil
	}
	if b.cur == nil {
		select {
		case c := <-b.free:
			b.cur = c[:0]
		default:
			b.mu.Unlock()
			return false
		}
		if cap(b.cur) < size {
			b.free <- b.cur
			b.cur = nil
			b.mu.Unlock()
			return false
		}
	}
	b.cur = r.AppendBinary(b.cur)
	b.mu.Unlock()
	return true
}

// handoff sends the current chunk to the sink if it holds anything.
func (b *buffer) handoff() {
	b.mu.Lock()
	if len(b.cur) > 0 {
		b.full <- b.cur
		b.cur = nil
	}
	b.mu.Unlock()
}
