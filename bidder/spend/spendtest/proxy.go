package spendtest

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
)

// DropProxy is a TCP proxy in front of a server (a redis-server) that can
// lose replies: armed with DropReplies, it forwards the client's command,
// lets the server execute it, and when the server's reply arrives it
// closes both connections instead of forwarding it. The client then sees
// a failed call whose command was applied: an unknown outcome.
// StartDropProxy's proxy forwards everything until DropEvery.
type DropProxy struct {
	// Addr is the proxy's 127.0.0.1:port, to give the client.
	Addr string

	target  string
	ln      net.Listener
	every   atomic.Int64 // lose every every-th reply ...
	left    atomic.Int64 // ... this many more times
	replies atomic.Int64
	dropped atomic.Int64
	mu      sync.Mutex
	conns   map[net.Conn]bool
	wg      sync.WaitGroup
}

// StartDropProxy starts a proxy to target; it is closed when tb ends.
func StartDropProxy(tb testing.TB, target string) *DropProxy {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("spendtest: proxy: %v", err)
	}
	p := &DropProxy{Addr: ln.Addr().String(), target: target, ln: ln, conns: map[net.Conn]bool{}}
	p.wg.Add(1)
	go p.accept()
	tb.Cleanup(p.close)
	return p
}

// DropEvery makes the proxy lose every k-th reply, n times, then forward
// everything again. A reply is one read of the server's answer, so one
// lost reply may be a whole pipeline's or part of it.
func (p *DropProxy) DropEvery(k, n int) {
	p.every.Store(int64(max(k, 1)))
	p.left.Store(int64(n))
}

// lose reports whether the reply just read is to be lost.
func (p *DropProxy) lose() bool {
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

// Dropped is how many replies the proxy has lost.
func (p *DropProxy) Dropped() int { return int(p.dropped.Load()) }

func (p *DropProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		if !p.track(c, s) {
			return
		}
		p.wg.Add(2)
		go func() { // client -> server
			defer p.wg.Done()
			_, _ = io.Copy(s, c)
			_ = s.Close()
		}()
		go func() { // server -> client, unless a reply is to be lost
			defer p.wg.Done()
			defer c.Close()
			defer s.Close()
			buf := make([]byte, 64<<10)
			for {
				n, err := s.Read(buf)
				if n > 0 {
					if p.lose() {
						return
					}
					if _, werr := c.Write(buf[:n]); werr != nil {
						return
					}
				}
				if err != nil {
					return
				}
			}
		}()
	}
}

func (p *DropProxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conns == nil {
		for _, c := range cs {
			_ = c.Close()
		}
		return false
	}
	for _, c := range cs {
		p.conns[c] = true
	}
	return true
}

func (p *DropProxy) close() {
	_ = p.ln.Close()
	p.mu.Lock()
	for c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
	p.mu.Unlock()
	p.wg.Wait()
}
