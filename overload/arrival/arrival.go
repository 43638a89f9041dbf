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
// the measured queueing delay (overload.Admission).
//
// How: Listen wraps a TCP listener. On Linux each accepted socket gets the
// SO_TIMESTAMPNS option, and Conn.Read reads with recvmsg(2) through the
// connection's syscall.RawConn (the Go runtime's poller waits for data),
// which then returns the kernel's receive time of the newest bytes read;
// Write is the net.TCPConn's. Time(c) returns it for a connection from
// this package's listener. (Linux turns receive timestamps on
// system-wide, asynchronously, when the first socket asks: the first
// requests after a start may be unstamped; Probe waits until stamps
// come.) Elsewhere, under the race detector (whose happens-before
// tracking through sockets lives in the ordinary read path), and for
// connections that are not TCP, Listen returns the listener unchanged and
// Time reports false: the bidder then counts from the handler's start,
// and its admission control does not judge the request.
//
// A short read (fasthttp's server reads the first byte of each request on
// its own, to hold no buffer while a connection idles) receives what is
// there into a pooled buffer that the next reads drain, so a request costs
// one recvmsg(2), not two.
//
// What the stamps cost: a stamped read takes about 0.2 us more CPU than a
// plain read(2) of the same bytes (BenchmarkRead, on loopback: the
// kernel's control message and its parsing), a small part of a bid; the
// read itself, which any server makes, is the rest.
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

// Probe opens a stamped loopback connection and waits, up to timeout, until
// the kernel stamps what it reads. Linux turns receive timestamps on
// system-wide when the first socket asks, asynchronously (and off again
// when the last one closes), so bytes that arrive just after the first
// Accept may carry no stamp. ok is false if stamps did not come (or this
// build does not stamp). Keep the probe open while stamps must be on;
// stop closes it.
func Probe(timeout time.Duration) (stop func(), ok bool) {
	stop = func() {}
	if !Supported {
		return stop, false
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return stop, false
	}
	sl := Listen(ln)
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		sl.Close()
		return stop, false
	}
	s, err := sl.Accept()
	sl.Close()
	if err != nil {
		c.Close()
		return stop, false
	}
	stop = func() { c.Close(); s.Close() }
	buf := make([]byte, 1)
	for end := time.Now().Add(timeout); time.Now().Before(end); time.Sleep(time.Millisecond) {
		if _, err := c.Write(buf); err != nil {
			break
		}
		if _, err := s.Read(buf); err != nil {
			break
		}
		if _, ok := Time(s); ok {
			return stop, true
		}
	}
	return stop, false
}
