// Package netfaulttest is a TCP proxy for tests that puts network faults
// between a client and its server (a redis-server, a Kafka broker): every
// chunk read from either side is forwarded after the current delay
// (SetDelay); while paused (Pause), chunks wait with the connections open
// and nothing answered, as from a hung server; armed with DropEvery, it
// loses some of the server's replies by closing both connections instead
// of forwarding them, so the client sees a failed call whose command was
// applied (an unknown outcome). SilentFlood opens connections that send
// nothing, as a slowloris client does.
package netfaulttest

import (
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Proxy forwards everything until SetDelay, Pause or DropEvery.
type Proxy struct {
	ln      net.Listener
	target  string
	delay   atomic.Int64 // nanoseconds added to every chunk
	every   atomic.Int64 // lose every every-th reply ...
	left    atomic.Int64 // ... this many more times
	replies atomic.Int64
	dropped atomic.Int64
	mu      sync.Mutex
	paused  bool
	resume  chan struct{} // closed by Resume
	conns   map[net.Conn]struct{}
	closed  bool
	wg      sync.WaitGroup
}

// Start starts a proxy on 127.0.0.1 to target; it is closed when tb ends.
func Start(tb testing.TB, target string) *Proxy {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("netfaulttest: listen: %v", err)
	}
	p := &Proxy{ln: ln, target: target, resume: make(chan struct{}), conns: map[net.Conn]struct{}{}}
	close(p.resume)
	p.wg.Add(1)
	go p.accept()
	tb.Cleanup(p.Close)
	return p
}

// Addr is the proxy's 127.0.0.1:port, to give the client.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// ListenAddr is the proxy's listening address.
func (p *Proxy) ListenAddr() net.Addr { return p.ln.Addr() }

// SetDelay delays every chunk by d from now on (0: none).
func (p *Proxy) SetDelay(d time.Duration) { p.delay.Store(int64(d)) }

// Pause holds every chunk until Resume.
func (p *Proxy) Pause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.paused {
		p.paused, p.resume = true, make(chan struct{})
	}
}

// Resume forwards the held chunks and the ones after.
func (p *Proxy) Resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.paused {
		p.paused = false
		close(p.resume)
	}
}

// DropEvery makes the proxy lose every k-th reply of the server, n times,
// then forward everything again. A reply is one read of the server's
// answer, so one lost reply may be a whole pipeline's or part of it.
func (p *Proxy) DropEvery(k, n int) {
	p.every.Store(int64(max(k, 1)))
	p.left.Store(int64(n))
}

// Dropped is how many replies the proxy has lost.
func (p *Proxy) Dropped() int { return int(p.dropped.Load()) }

// lose reports whether the reply just read is to be lost.
func (p *Proxy) lose() bool {
	k := p.every.Load()
	if k == 0 || p.replies.Add(1)%k != 0 {
		return false
	}
	if p.left.Add(-1) < 0 {
		p.left.Store(0)
		return false
	}
	p.dropped.Add(1)
	return true
}

// Close stops the proxy and closes every connection. Safe to call more
// than once.
func (p *Proxy) Close() {
	_ = p.ln.Close()
	p.Resume()
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// track adds c to the open connections (false: the proxy is closed, c is
// closed) or removes it.
func (p *Proxy) track(c net.Conn, add bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !add {
		delete(p.conns, c)
		return true
	}
	if p.closed {
		_ = c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			s, err := net.DialTimeout("tcp", p.target, time.Second)
			if err != nil { // server down: the client sees the connection close
				_ = c.Close()
				return
			}
			if !p.track(c, true) || !p.track(s, true) {
				_ = c.Close()
				_ = s.Close()
				return
			}
			var pipes sync.WaitGroup
			pipes.Add(2)
			go func() { defer pipes.Done(); p.pipe(s, c, false) }()
			go func() { defer pipes.Done(); p.pipe(c, s, true) }()
			pipes.Wait()
			p.track(c, false)
			p.track(s, false)
		}()
	}
}

// pipe copies src to dst chunk by chunk, applying the delay, the pause
// and, for the server's replies, DropEvery; it closes both ends when
// either fails or a reply is lost.
func (p *Proxy) pipe(dst, src net.Conn, replies bool) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 64<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if d := time.Duration(p.delay.Load()); d > 0 {
				time.Sleep(d)
			}
			p.mu.Lock()
			wait := p.resume
			p.mu.Unlock()
			<-wait
			if replies && p.lose() {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil { // io.EOF or a closed connection
			return
		}
	}
}
