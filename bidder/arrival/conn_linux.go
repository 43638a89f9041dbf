//go:build linux && !race

package arrival

import (
	"io"
	"net"
	"os"
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
	sc.step, sc.wstep = sc.recv, sc.send
	return sc, nil
}

// conn is a stamped TCP connection. Read is for one goroutine at a time
// (as net.Conn's contract has it for a stream read by one reader);
// LastArrival is meant for that same goroutine, between reads.
type conn struct {
	*net.TCPConn
	raw  syscall.RawConn
	step func(uintptr) bool // c.recv, kept so that a Read allocates no closure

	wstep func(uintptr) bool // c.send, likewise for Write
	wb    []byte             // what Write has left to send
	wn    int
	werrn syscall.Errno

	msg  syscall.Msghdr
	iov  syscall.Iovec
	oob  [8]uint64 // control buffer (uint64s for the cmsghdr's alignment): room for one SCM_TIMESTAMPNS (32 bytes on 64-bit)
	n    int
	errn syscall.Errno
	last int64 // unix ns of the newest bytes read; 0 = none stamped yet
}

func (c *conn) LastArrival() (time.Time, bool) {
	if c.last == 0 {
		return time.Time{}, false
	}
	return time.Unix(0, c.last), true
}

// Read reads with recvmsg(2) through the runtime's poller (deadlines and
// Close work as for any net.Conn) and records the receive time.
func (c *conn) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	c.iov.Base = &b[0]
	c.iov.SetLen(len(b))
	c.msg.Iov, c.msg.Iovlen = &c.iov, 1
	c.msg.Control = (*byte)(unsafe.Pointer(&c.oob[0]))
	err := c.raw.Read(c.step)
	c.iov.Base, c.msg.Iov, c.msg.Control = nil, nil, nil // keep no pointer to b
	if err == nil && c.errn != 0 {
		err = os.NewSyscallError("recvmsg", c.errn)
	}
	if err != nil {
		return 0, &net.OpError{Op: "read", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
	}
	if c.n == 0 {
		return 0, io.EOF
	}
	oob := unsafe.Slice((*byte)(unsafe.Pointer(&c.oob[0])), 8*len(c.oob))
	if ts, ok := stamp(oob[:min(int(c.msg.Controllen), len(oob))]); ok {
		c.last = ts
	}
	return c.n, nil
}

// Write writes b with write(2) through the runtime's poller (deadlines and
// Close work as for any net.Conn), as raw system calls: see send.
func (c *conn) Write(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	c.wb, c.wn, c.werrn = b, 0, 0
	err := c.raw.Write(c.wstep)
	n := c.wn
	c.wb = nil // keep no pointer to b
	if err == nil && c.werrn != 0 {
		err = os.NewSyscallError("write", c.werrn)
	}
	if err != nil {
		return n, &net.OpError{Op: "write", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
	}
	return n, nil
}

// send is the RawConn.Write callback: write(2) until all of c.wb is sent;
// EAGAIN (the socket's buffer full) hands the wait to the poller.
//
// recv and send are raw system calls, without the runtime's
// entersyscall/exitsyscall: the socket is non-blocking (Go's net package
// sets it so), so neither ever waits. While a goroutine is "in a system
// call" the runtime's monitor thread may hand its P to another thread,
// and each hand-off makes that monitor wake every 20 us for a millisecond
// or more; on loopback a write also runs the receiver's TCP work, long
// enough to be caught. bench/httpc does the same for the load generator
// (a fifth of its CPU went to those wake-ups).
func (c *conn) send(fd uintptr) bool {
	for len(c.wb) > 0 {
		n, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(unsafe.SliceData(c.wb))), uintptr(len(c.wb)))
		switch e {
		case 0:
			c.wn += int(n)
			c.wb = c.wb[n:]
		case syscall.EINTR:
		case syscall.EAGAIN:
			return false
		default:
			c.werrn = e
			return true
		}
	}
	return true
}

// recv is the RawConn.Read callback: one recvmsg(2). The socket is
// non-blocking (Go's net package sets it so), so the call never waits;
// EAGAIN hands the wait to the poller. A raw system call: see send.
func (c *conn) recv(fd uintptr) bool {
	for {
		c.msg.SetControllen(8 * len(c.oob))
		r, _, e := syscall.RawSyscall(syscall.SYS_RECVMSG, fd, uintptr(unsafe.Pointer(&c.msg)), 0)
		switch e {
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false
		case 0:
			c.n, c.errn = int(r), 0
		default:
			c.n, c.errn = 0, e
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
