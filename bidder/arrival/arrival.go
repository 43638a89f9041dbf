// Package arrival tells the bidder when a request's bytes reached this
// machine, so that the time a request waited before its handler ran (in
// the socket's receive queue and in the Go scheduler's run queues) is
// measured instead of guessed.
//
// An SSP's tmax runs from when it sent the request. A bidder that starts
// its clock when its handler starts does not see the time the request
// queued before that; under overload that queue is where the time goes:
// every answer gets later, all of them end up after tmax, and the bidder
// keeps spending its CPU on bids nobody will take. With the arrival time
// the bidder counts its deadline from the arrival, answers a request that
// already waited past its budget with an immediate no-bid, and sheds by
// the measured queueing delay (bidder.Admission).
//
// How: Listen wraps a TCP listener. On Linux each accepted socket gets the
// SO_TIMESTAMPNS option, and Conn.Read reads with recvmsg(2), which then
// returns the kernel's receive time of the newest bytes read. Time(c)
// returns it for a connection from this package's listener. Elsewhere,
// under the race detector (whose happens-before tracking through sockets
// lives in the ordinary read path), and for connections that are not
// TCP, Listen returns the listener unchanged and Time reports false: the
// bidder then falls back to the handler's start and to the scheduling
// latency signal.
package arrival

import (
	"net"
	"time"
)

// Stamped is a connection that knows when its newest bytes arrived.
type Stamped interface {
	// LastArrival is the kernel's receive time of the newest bytes the
	// last Read returned; ok is false before any stamped read.
	LastArrival() (t time.Time, ok bool)
}

// Time returns the arrival time of the newest bytes read from c, when c
// came from a Listen listener and the kernel stamped them.
func Time(c net.Conn) (time.Time, bool) {
	if s, ok := c.(Stamped); ok {
		return s.LastArrival()
	}
	return time.Time{}, false
}

// Listen returns a listener whose TCP connections are stamped (on Linux,
// without the race detector); any other listener or platform: ln itself.
func Listen(ln net.Listener) net.Listener { return listen(ln) }
