package overload

import (
	"io"
	"net"
	"sync/atomic"
	"time"

	"github.com/rtbd/rtbd/overload/arrival"
)

// DefaultMaxDrainBytes is the default of what a connection closed after a
// 413 reads and discards (bidder.max_drain_bytes), so that a client still
// sending its body reads the 413 instead of a TCP reset.
const DefaultMaxDrainBytes = 32 << 20

// Drain wraps a server's listener so that a connection answered with an
// error before its body was read (413) can be closed gracefully (see
// DrainOnClose), and one the server refused at accept is drained too.
func Drain(ln net.Listener) net.Listener { return drainListener{ln} }

// drainListener is Drain's listener.
type drainListener struct{ net.Listener }

func (l drainListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &drainConn{Conn: c}, nil
}

// drainConn is a connection of Drain. Closing one marked by DrainOnClose
// half-closes it (the client sees the response end), then reads and
// discards up to drain bytes within timeout (until the client closes
// first), then closes: closing a socket with unread data sends a TCP reset,
// and a client still writing its body would lose the 413 it was sent.
//
// A connection closed before anything read it is one the server refused
// (bidder.max_conns: fasthttp wrote its 503 in the accept loop): it too is
// half-closed and drained, for up to rejectDrainTimeout and
// rejectDrainBytes, by one of at most maxRejectDrains goroutines (beyond
// those it is closed at once), so the client reads the 503 and the
// connection's end rather than a reset for the request it already sent.
type drainConn struct {
	net.Conn
	drain   atomic.Int64
	timeout atomic.Int64 // ns
	read    atomic.Bool  // Read was called
}

// Bounds of the drain of a refused connection (see drainConn).
const (
	maxRejectDrains    = 256
	rejectDrainBytes   = 64 << 10
	rejectDrainTimeout = time.Second
)

var rejectDrains = make(chan struct{}, maxRejectDrains)

func (c *drainConn) Read(b []byte) (int, error) {
	if !c.read.Load() {
		c.read.Store(true)
	}
	return c.Conn.Read(b)
}

// LastArrival passes arrival's stamps through (arrival.Time).
func (c *drainConn) LastArrival() (time.Time, bool) { return arrival.Time(c.Conn) }

func (c *drainConn) Close() error {
	if c.read.CompareAndSwap(false, true) {
		select {
		case rejectDrains <- struct{}{}:
			c.timeout.Store(int64(rejectDrainTimeout))
			c.drain.Store(rejectDrainBytes)
			go func() {
				defer func() { <-rejectDrains }()
				c.Close()
			}()
			return nil
		default:
		}
	}
	if n := c.drain.Swap(0); n > 0 {
		if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		}
		if c.Conn.SetReadDeadline(time.Now().Add(time.Duration(c.timeout.Load()))) == nil {
			_, _ = io.CopyN(io.Discard, c.Conn, n)
		}
	}
	return c.Conn.Close()
}

// DrainOnClose marks c (when it came from Drain) to be half-closed and
// drained of up to bytes within timeout when the server closes it after
// its response. It reports whether c was marked.
func DrainOnClose(c net.Conn, bytes int64, timeout time.Duration) bool {
	dc, ok := c.(*drainConn)
	if !ok || bytes <= 0 {
		return false
	}
	dc.timeout.Store(int64(timeout))
	dc.drain.Store(bytes)
	return true
}

// CloseNow closes c at once, without the drain a connection of Drain does
// when closed (one refused by the caller's own rule at accept).
func CloseNow(c net.Conn) error {
	if dc, ok := c.(*drainConn); ok {
		return dc.Conn.Close()
	}
	return c.Close()
}
