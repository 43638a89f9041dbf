package catalog

import (
	"math/bits"
	"sync"

	"google.golang.org/grpc/mem"
)

// answerBuffers holds the buffers encoded answers go out in. Unlike gRPC's
// default pool it does not clear a buffer it hands out again: an answer
// is copied over its whole length at once, and clearing cost a node a
// memclr of the whole class (16 KiB for a 15-product answer of about
// 5 KiB) on every call.
var answerBuffers mem.BufferPool = &dirtyPool{}

// Buffer classes: powers of two from 1 KiB to 1 MiB. Larger buffers are
// made and left to the garbage collector.
const (
	dirtyMinShift = 10
	dirtyMaxShift = 20
)

// dirtyPool is a mem.BufferPool of power-of-two classes whose buffers are
// not zeroed on reuse. Get(n) returns n bytes whose content is undefined.
type dirtyPool struct {
	classes [dirtyMaxShift - dirtyMinShift + 1]sync.Pool
}

// class is the index of the smallest class holding n bytes, or -1.
func dirtyClass(n int) int {
	if n > 1<<dirtyMaxShift {
		return -1
	}
	if n <= 1<<dirtyMinShift {
		return 0
	}
	return bits.Len(uint(n-1)) - dirtyMinShift
}

func (p *dirtyPool) Get(n int) *[]byte {
	c := dirtyClass(n)
	if c < 0 {
		b := make([]byte, n)
		return &b
	}
	if v, ok := p.classes[c].Get().(*[]byte); ok {
		*v = (*v)[:n]
		return v
	}
	b := make([]byte, n, 1<<(c+dirtyMinShift))
	return &b
}

func (p *dirtyPool) Put(b *[]byte) {
	c := cap(*b)
	if c < 1<<dirtyMinShift || c > 1<<dirtyMaxShift || c&(c-1) != 0 {
		return // not one of ours
	}
	p.classes[bits.Len(uint(c))-1-dirtyMinShift].Put(b)
}
