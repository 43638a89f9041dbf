//go:build linux && !race

package arrival

import (
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

// Supported reports whether this build stamps connections.
const Supported = true

type listener struct{ net.Listener }

func listen(ln net.Listener) net.Listener {
	if _, ok := ln.(*net.TCPListener); !ok {
		return ln
	}
	return listener{ln}
}

// Accept accepts a connection and turns its receive timestamps on. A
// socket that refuses the option is returned unwrapped (unstamped).
func (l listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return c, nil
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return c, nil
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1)
	}); err != nil || serr != nil {
		return c, nil
	}
	sc := &conn{TCPConn: tc, raw: raw}
	sc.step, sc.stepShort = sc.recv, sc.recvShort
	return sc, nil
}

// shortRead is the largest Read served through a pooled buffer (see
// Read); shortBufBytes that buffer's size.
const (
	shortRead     = 64
	shortBufBytes = 4 << 10
)

// shortBufs are the pooled buffers of short reads.
var shortBufs = sync.Pool{New: func() any { return new([shortBufBytes]byte) }}

// conn is a stamped TCP connection: Read is recvmsg(2) through the
// connection's syscall.RawConn, so the Go runtime's poller waits for data
// (deadlines and Close work as for any net.Conn) and the system call is an
// ordinary one; Write and the rest are the net.TCPConn's. Read is for one
// goroutine at a time (as net.Conn's contract has it for a stream read by
// one reader); LastArrival is meant for that same goroutine, between reads.
type conn struct {
	*net.TCPConn
	raw       syscall.RawConn
	step      func(uintptr) bool // c.recv, kept so that a Read allocates no closure
	stepShort func(uintptr) bool // c.recvShort, likewise

	// pend holds what a short Read received beyond what it returned
	// (pend[off:end]), served by the next Reads; nil when there is none.
	pend     *[shortBufBytes]byte
	off, end int

	b    []byte    // the buffer of the Read in progress
	oob  [8]uint64 // control buffer (uint64s for the cmsghdr's alignment): room for one SCM_TIMESTAMPNS (32 bytes on 64-bit)
	n    int
	oobn int
	err  error
	last int64 // unix ns of the newest bytes read; 0 = none stamped yet
}

func (c *conn) LastArrival() (time.Time, bool) {
	if c.last == 0 {
		return time.Time{}, false
	}
	return time.Unix(0, c.last), true
}

// Read reads with recvmsg(2) and records the receive time.
//
// A short Read (at most shortRead bytes: fasthttp's server reads the first
// byte of each request on its own, then the rest) receives into a pooled
// buffer instead, as much as is there, and the next Reads take the rest
// from it without a system call; the buffer goes back to the pool once
// they have, so an idle connection holds none.
func (c *conn) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	if c.pend != nil {
		return c.fromPending(b), nil
	}
	c.b = b
	step := c.step
	if len(b) <= shortRead {
		step = c.stepShort
	}
	err := c.raw.Read(step)
	c.b = nil // keep no pointer to b
	if err == nil {
		err = c.err
	}
	if err != nil {
		return 0, &net.OpError{Op: "read", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
	}
	if c.n == 0 {
		return 0, io.EOF
	}
	if ts, ok := stamp(c.oobBytes()[:c.oobn]); ok {
		c.last = ts
	}
	if c.pend != nil {
		return c.fromPending(b), nil
	}
	return c.n, nil
}

// fromPending copies pending bytes into b, dropping the buffer once it is
// drained.
func (c *conn) fromPending(b []byte) int {
	n := copy(b, c.pend[c.off:c.end])
	c.off += n
	if c.off == c.end {
		shortBufs.Put(c.pend)
		c.pend = nil
	}
	return n
}

// Write is the net.TCPConn's, except that an empty write is no system
// call (and no error, whatever the socket's state).
func (c *conn) Write(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	return c.TCPConn.Write(b)
}

func (c *conn) oobBytes() []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(&c.oob[0])), 8*len(c.oob))
}

// recv is the RawConn.Read callback: one recvmsg(2) on the non-blocking
// socket; EAGAIN hands the wait to the poller.
func (c *conn) recv(fd uintptr) bool {
	for {
		n, oobn, _, _, err := syscall.Recvmsg(int(fd), c.b, c.oobBytes(), 0)
		switch err {
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false
		case nil:
			c.n, c.oobn, c.err = n, min(oobn, 8*len(c.oob)), nil
		default:
			c.n, c.oobn, c.err = 0, 0, os.NewSyscallError("recvmsg", err)
		}
		return true
	}
}

// recvShort is recv into a pooled buffer (see Read), taken only once
// the socket has data: an idle connection waits in the poller with none.
func (c *conn) recvShort(fd uintptr) bool {
	buf := shortBufs.Get().(*[shortBufBytes]byte)
	for {
		n, oobn, _, _, err := syscall.Recvmsg(int(fd), buf[:], c.oobBytes(), 0)
		switch err {
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			shortBufs.Put(buf)
			return false
		case nil:
			c.n, c.oobn, c.err = n, min(oobn, 8*len(c.oob)), nil
			if n > 0 {
				c.pend, c.off, c.end = buf, 0, n
			} else {
				shortBufs.Put(buf)
			}
		default:
			c.n, c.oobn, c.err = 0, 0, os.NewSyscallError("recvmsg", err)
			shortBufs.Put(buf)
		}
		return true
	}
}

// stamp finds the SCM_TIMESTAMPNS message in a control buffer.
func stamp(oob []byte) (int64, bool) {
	hdr := syscall.CmsgLen(0)
	for len(oob) >= hdr {
		h := (*syscall.Cmsghdr)(unsafe.Pointer(&oob[0]))
		l := int(h.Len)
		if l < hdr || l > len(oob) {
			return 0, false
		}
		if h.Level == syscall.SOL_SOCKET && h.Type == syscall.SO_TIMESTAMPNS && l-hdr >= int(unsafe.Sizeof(syscall.Timespec{})) {
			ts := (*syscall.Timespec)(unsafe.Pointer(&oob[hdr]))
			return ts.Nano(), true
		}
		oob = oob[min(syscall.CmsgSpace(l-hdr), len(oob)):]
	}
	return 0, false
}
