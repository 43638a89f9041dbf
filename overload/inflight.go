package overload

import "sync/atomic"

// DefaultMaxInFlight is InFlight's default bound (bidder.max_in_flight).
const DefaultMaxInFlight = 1024

// InFlight bounds the requests in a handler at once: beyond its bound a
// request is shed before its body is decoded. It is safe for concurrent
// use and allocation-free.
type InFlight struct {
	max int64
	n   atomic.Int64
}

// NewInFlight returns an InFlight admitting at most max requests at once
// (DefaultMaxInFlight when max <= 0).
func NewInFlight(max int) *InFlight {
	if max <= 0 {
		max = DefaultMaxInFlight
	}
	return &InFlight{max: int64(max)}
}

// Enter counts one more request in flight and reports whether it is
// within the bound. Every Enter, admitted or not, is paired with a Leave.
func (f *InFlight) Enter() bool { return f.n.Add(1) <= f.max }

// Leave counts a request out.
func (f *InFlight) Leave() { f.n.Add(-1) }

// N is the requests in flight now.
func (f *InFlight) N() int64 { return f.n.Load() }
