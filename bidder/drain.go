package bidder

import (
	"io"
	"net"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/rtbd/rtbd/bidder/arrival"
)

// DefaultMaxDrainBytes is Options.MaxDrainBytes's default: what a
// connection closed after a 413 reads and discards, so that a client still
// sending its body reads the 413 instead of a TCP reset.
const DefaultMaxDrainBytes = 32 << 20

// drainListener wraps the bid server's connections (Listen) so that one
// answered 413 can be closed gracefully.
type drainListener struct{ net.Listener }

func (l drainListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &drainConn{Conn: c}, nil
}

// drainConn is a bid server connection. Closing one marked by drainOnClose
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

// drainOnClose marks rc's connection (when it came from Listen) to be
// drained when fasthttp closes it after the response.
func (b *Bidder) drainOnClose(rc *fasthttp.RequestCtx) {
	if c, ok := rc.Conn().(*drainConn); ok && b.opts.MaxDrainBytes > 0 {
		c.timeout.Store(int64(b.opts.DrainTimeout))
		c.drain.Store(int64(b.opts.MaxDrainBytes))
	}
}

// expect is the server's ExpectHandler: a request with Expect:
// 100-continue that declares a body over MaxBodyBytes gets 413 and no
// 100 Continue (fasthttp then closes the connection, drained in case the
// client sends its body anyway).
func (b *Bidder) expect(rc *fasthttp.RequestCtx) int {
	if rc.Request.Header.ContentLength() > b.opts.MaxBodyBytes {
		b.m.rejected[rejTooLarge].Inc()
		b.drainOnClose(rc)
		return fasthttp.StatusRequestEntityTooLarge
	}
	return fasthttp.StatusContinue
}
