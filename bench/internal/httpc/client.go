// Package httpc is the load generator's HTTP/1.1 client.
//
// The harness must cost less than what it measures (under half a
// core at 20,000 requests/s). With fasthttp's HostClient, the generator
// cost as much as a bare fasthttp client loop, about half of it in the
// client's own code (request and response header objects, pools, two
// deadline calls per request). wrk and wrk2 have their own minimal HTTP
// parsers for the same reason. This client does only what a load
// generator needs:
//
//   - keep-alive connections, one request at a time on each (no
//     pipelining), reused last-in first-out so that a burst's extra
//     connections idle out; at most MaxConns open, a caller waiting for a
//     free one until its deadline (then ErrNoFreeConns);
//   - each request written with one write (head and body in one buffer),
//     one deadline per request covering write and read;
//   - responses framed by Content-Length, chunked transfer coding, or the
//     connection's end (HTTP/1.0 style); 1xx interim responses skipped;
//     204, 304 and HEAD answers have no body;
//   - no retries and no redirects: a benchmark must see failures, not
//     hide them;
//   - bounded: a header block over MaxHeaderBytes or a body over
//     MaxBodyBytes is ErrTooLarge, a malformed response ErrBadResponse;
//     either way the connection is closed, never reused.
//
// The status code, the body and the response headers are returned; the
// body is copied into the caller's Response, so it outlives the
// connection. A Client is safe for concurrent use.
package httpc

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Errors returned by Do (besides the net package's: a timeout is a
// net.Error whose Timeout() is true; a refused or reset connection is a
// *net.OpError; a connection closed before a full response is io.EOF or
// io.ErrUnexpectedEOF).
var (
	// ErrNoFreeConns: MaxConns connections were busy until the request's
	// deadline.
	ErrNoFreeConns = errors.New("httpc: no free connection before the deadline")
	// ErrBadResponse: the server's answer is not HTTP/1.x.
	ErrBadResponse = errors.New("httpc: malformed response")
	// ErrTooLarge: the response's header block or body is over the limit.
	ErrTooLarge = errors.New("httpc: response too large")
	// ErrInvalid: the Options or the Request are unusable.
	ErrInvalid = errors.New("httpc: invalid")
)

// Options configure a Client.
type Options struct {
	// Addrs are the servers' "host:port"; each new connection dials the
	// next one, round-robin. Required.
	Addrs []string
	// Host is the Host header. Zero: Addrs[0].
	Host string
	// TLS, if set, makes every connection TLS (https). ServerName defaults
	// to Host's host part.
	TLS *tls.Config
	// MaxConns bounds the open connections. Zero: 1024.
	MaxConns int
	// MaxIdle: a connection idle longer is closed instead of reused (it
	// should be below the server's idle timeout, or the first request
	// after a pause fails on a connection the server closed), by the next
	// request that would take it or by a sweep every MaxIdle/2. Zero: 10 s.
	MaxIdle time.Duration
	// DialTimeout bounds a dial (within the request's deadline). Zero: 3 s.
	DialTimeout time.Duration
	// MaxHeaderBytes bounds a response's status line and headers. Zero:
	// 64 KiB.
	MaxHeaderBytes int
	// MaxBodyBytes bounds a response body. Zero: 64 MiB.
	MaxBodyBytes int
}

// Request is one request. The Client reads it during Do only.
type Request struct {
	Method      string // "GET", "POST", ... Zero: GET.
	URI         []byte // request target: "/path?query"
	ContentType string // sent when non-empty
	Header      [][2]string
	Body        []byte // sent with its Content-Length (also 0 for POST/PUT/PATCH)
}

// Response is one answer. Its buffers are reused by the next Do it is
// passed to.
type Response struct {
	Status int
	Body   []byte
	header []byte // the header lines, after the status line
}

// Header returns the value of the first header named name (ASCII case
// insensitive), with surrounding spaces trimmed; nil when absent.
func (r *Response) Header(name string) []byte {
	h := r.header
	for len(h) > 0 {
		line := h
		if i := bytes.IndexByte(h, '\n'); i >= 0 {
			line, h = h[:i], h[i+1:]
		} else {
			h = nil
		}
		k, v, ok := bytes.Cut(line, []byte{':'})
		if ok && len(k) == len(name) && asciiEqualFold(k, name) {
			return bytes.TrimSpace(v)
		}
	}
	return nil
}

// Client sends requests over pooled keep-alive connections.
type Client struct {
	o      Options
	dialer net.Dialer
	next   atomic.Uint32
	freed  chan struct{} // a connection was returned or closed

	mu       sync.Mutex
	idle     []*conn // LIFO
	open     int     // open or dialling connections
	sweeping bool    // a sweep goroutine runs

	dials atomic.Int64
}

// New validates o and returns a Client.
func New(o Options) (*Client, error) {
	var probs []string
	if len(o.Addrs) == 0 {
		probs = append(probs, "addrs: at least one host:port required")
	}
	for i, a := range o.Addrs {
		if _, _, err := net.SplitHostPort(a); err != nil {
			probs = append(probs, fmt.Sprintf("addrs[%d]: %v", i, err))
		}
	}
	for _, f := range []struct {
		name string
		v    int64
	}{{"max_conns", int64(o.MaxConns)}, {"max_idle", int64(o.MaxIdle)}, {"dial_timeout", int64(o.DialTimeout)},
		{"max_header_bytes", int64(o.MaxHeaderBytes)}, {"max_body_bytes", int64(o.MaxBodyBytes)}} {
		if f.v < 0 {
			probs = append(probs, fmt.Sprintf("%s: must be >= 0, got %d", f.name, f.v))
		}
	}
	if len(probs) > 0 {
		return nil, fmt.Errorf("%w options: %v", ErrInvalid, probs)
	}
	o.Host = cmp.Or(o.Host, o.Addrs[0])
	o.MaxConns = cmp.Or(o.MaxConns, 1024)
	o.MaxIdle = cmp.Or(o.MaxIdle, 10*time.Second)
	o.DialTimeout = cmp.Or(o.DialTimeout, 3*time.Second)
	o.MaxHeaderBytes = cmp.Or(o.MaxHeaderBytes, 64<<10)
	o.MaxBodyBytes = cmp.Or(o.MaxBodyBytes, 64<<20)
	if o.TLS != nil {
		o.TLS = o.TLS.Clone()
		if o.TLS.ServerName == "" {
			host, _, err := net.SplitHostPort(o.Host)
			if err != nil {
				host = o.Host
			}
			o.TLS.ServerName = host
		}
	}
	return &Client{o: o, freed: make(chan struct{}, 1)}, nil
}

// Open is the number of open (or dialling) connections.
func (c *Client) Open() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.open
}

// Dials is the number of connections dialled so far.
func (c *Client) Dials() int64 { return c.dials.Load() }

// CloseIdle closes the idle connections.
func (c *Client) CloseIdle() {
	c.mu.Lock()
	idle := c.idle
	c.idle = nil
	c.mu.Unlock()
	for _, cn := range idle {
		c.discard(cn)
	}
}

// Do sends req and reads its answer into resp, all before deadline (zero:
// no deadline). On an error the connection is closed.
func (c *Client) Do(req *Request, deadline time.Time, resp *Response) error {
	cn, err := c.get(deadline)
	if err != nil {
		return err
	}
	cn.wbuf = appendRequest(cn.wbuf[:0], req, c.o.Host)
	if err := cn.send(deadline); err != nil {
		c.discard(cn)
		return err
	}
	keep, err := cn.readResponse(req.Method == "HEAD", resp, c.o.MaxHeaderBytes, c.o.MaxBodyBytes)
	if err != nil {
		c.discard(cn)
		return err
	}
	if !keep || cn.r != cn.w { // closing, or bytes nobody asked for: not reusable
		c.discard(cn)
		return nil
	}
	c.put(cn)
	return nil
}

// get returns an idle connection, dials one, or waits for one.
func (c *Client) get(deadline time.Time) (*conn, error) {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for waited := false; ; waited = true {
		c.mu.Lock()
		if n := len(c.idle); n > 0 {
			cn := c.idle[n-1]
			c.idle[n-1] = nil
			c.idle = c.idle[:n-1]
			more := n > 1
			c.mu.Unlock()
			if waited && more {
				c.signal() // pass the wake-up on: a token dropped while full could strand another waiter
			}
			if time.Since(cn.used) > c.o.MaxIdle {
				c.discard(cn)
				continue
			}
			return cn, nil
		}
		if c.open < c.o.MaxConns {
			c.open++
			more := c.open < c.o.MaxConns
			c.mu.Unlock()
			if waited && more {
				c.signal()
			}
			cn, err := c.dial(deadline)
			if err != nil {
				c.closed()
				return nil, err
			}
			return cn, nil
		}
		c.mu.Unlock()
		if deadline.IsZero() {
			<-c.freed
			continue
		}
		d := time.Until(deadline)
		if d <= 0 {
			return nil, ErrNoFreeConns
		}
		if timer == nil {
			timer = time.NewTimer(d)
		} else {
			timer.Reset(d)
		}
		select {
		case <-c.freed:
		case <-timer.C:
			return nil, ErrNoFreeConns
		}
	}
}

func (c *Client) dial(deadline time.Time) (*conn, error) {
	addr := c.o.Addrs[int(c.next.Add(1)-1)%len(c.o.Addrs)]
	ctx, cancel := context.WithTimeout(context.Background(), c.o.DialTimeout)
	defer cancel()
	if !deadline.IsZero() {
		var cancel2 context.CancelFunc
		ctx, cancel2 = context.WithDeadline(ctx, deadline)
		defer cancel2()
	}
	c.dials.Add(1)
	var nc net.Conn
	var err error
	if c.o.TLS != nil {
		d := tls.Dialer{NetDialer: &c.dialer, Config: c.o.TLS}
		nc, err = d.DialContext(ctx, "tcp", addr)
	} else {
		nc, err = c.dialer.DialContext(ctx, "tcp", addr)
	}
	if err != nil {
		return nil, err
	}
	cn := &conn{nc: nc, rd: nc, rbuf: make([]byte, 8<<10)}
	if sc, ok := nc.(syscall.Conn); ok {
		if cn.raw, _ = sc.SyscallConn(); cn.raw != nil {
			cn.step = cn.rawStep
		}
	}
	return cn, nil
}

func (c *Client) put(cn *conn) {
	cn.used = time.Now()
	c.mu.Lock()
	c.idle = append(c.idle, cn)
	start := !c.sweeping
	c.sweeping = true
	c.mu.Unlock()
	c.signal()
	if start {
		go c.sweep()
	}
}

// sweep closes connections idle longer than MaxIdle, every MaxIdle/2, so
// that a client left alone (a finished run) does not hold the server's
// sockets. It ends when no connection is open; put starts it again.
func (c *Client) sweep() {
	t := time.NewTicker(max(c.o.MaxIdle/2, time.Millisecond))
	defer t.Stop()
	for range t.C {
		cut := time.Now().Add(-c.o.MaxIdle)
		c.mu.Lock()
		n := 0 // idle is in order of use: the stalest first
		for n < len(c.idle) && c.idle[n].used.Before(cut) {
			n++
		}
		stale := slices.Clone(c.idle[:n])
		k := copy(c.idle, c.idle[n:])
		clear(c.idle[k:])
		c.idle = c.idle[:k]
		c.open -= n
		done := c.open == 0
		if done {
			c.sweeping = false
		}
		c.mu.Unlock()
		for _, cn := range stale {
			cn.nc.Close()
		}
		if n > 0 {
			c.signal()
		}
		if done {
			return
		}
	}
}

func (c *Client) discard(cn *conn) {
	cn.nc.Close()
	c.closed()
}

func (c *Client) closed() {
	c.mu.Lock()
	c.open--
	c.mu.Unlock()
	c.signal()
}

// signal wakes one waiter, if any (a stale token only costs a waiter a
// second look).
func (c *Client) signal() {
	select {
	case c.freed <- struct{}{}:
	default:
	}
}

// appendRequest writes req's head and body.
func appendRequest(b []byte, req *Request, host string) []byte {
	m := req.Method
	if m == "" {
		m = "GET"
	}
	b = append(b, m...)
	b = append(b, ' ')
	if len(req.URI) == 0 {
		b = append(b, '/')
	}
	b = append(b, req.URI...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, host...)
	b = append(b, "\r\n"...)
	if len(req.Body) > 0 || m == "POST" || m == "PUT" || m == "PATCH" {
		b = append(b, "Content-Length: "...)
		b = strconv.AppendInt(b, int64(len(req.Body)), 10)
		b = append(b, "\r\n"...)
	}
	if req.ContentType != "" {
		b = append(b, "Content-Type: "...)
		b = append(b, req.ContentType...)
		b = append(b, "\r\n"...)
	}
	for _, kv := range req.Header {
		b = append(b, kv[0]...)
		b = append(b, ": "...)
		b = append(b, kv[1]...)
		b = append(b, "\r\n"...)
	}
	b = append(b, "\r\n"...)
	return append(b, req.Body...)
}

func asciiEqualFold(b []byte, s string) bool {
	for i := range len(b) {
		x, y := b[i], s[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
