package e2e

import (
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// relay is a TCP relay between the bidder and redis-server that the test
// can slow down or pause: every chunk read from either side is forwarded
// after the current delay; while paused, chunks wait (the connection
// stays open, nothing is answered: a hung Redis). Closing it closes every
// connection.
type relay struct {
	ln      net.Listener
	backend string
	delay   atomic.Int64 // nanoseconds added to every chunk
	mu      sync.Mutex
	paused  bool
	resume  chan struct{} // closed by Resume
	conns   map[net.Conn]struct{}
	wg      sync.WaitGroup
}

func startRelay(t testing.TB, backend string) *relay {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &relay{ln: ln, backend: backend, resume: make(chan struct{}), conns: map[net.Conn]struct{}{}}
	close(r.resume)
	r.wg.Add(1)
	go r.accept()
	t.Cleanup(r.Close)
	return r
}

func (r *relay) Addr() string { return r.ln.Addr().String() }

// SetDelay delays every chunk by d from now on (0: none).
func (r *relay) SetDelay(d time.Duration) { r.delay.Store(int64(d)) }

// Pause holds every chunk until Resume.
func (r *relay) Pause() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.paused {
		r.paused, r.resume = true, make(chan struct{})
	}
}

// Resume forwards the held chunks and the ones after.
func (r *relay) Resume() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.paused {
		r.paused = false
		close(r.resume)
	}
}

func (r *relay) Close() {
	r.ln.Close()
	r.Resume()
	r.mu.Lock()
	for c := range r.conns {
		c.Close()
	}
	r.mu.Unlock()
	r.wg.Wait()
}

func (r *relay) track(c net.Conn, add bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if add {
		r.conns[c] = struct{}{}
	} else {
		delete(r.conns, c)
	}
}

func (r *relay) accept() {
	defer r.wg.Done()
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return
		}
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			b, err := net.DialTimeout("tcp", r.backend, time.Second)
			if err != nil { // Redis down: the client sees the connection close
				c.Close()
				return
			}
			r.track(c, true)
			r.track(b, true)
			var pipes sync.WaitGroup
			pipes.Add(2)
			go func() { defer pipes.Done(); r.pipe(b, c) }()
			go func() { defer pipes.Done(); r.pipe(c, b) }()
			pipes.Wait()
			r.track(c, false)
			r.track(b, false)
		}()
	}
}

// pipe copies src to dst chunk by chunk, applying the delay and the pause;
// it closes both ends when either fails.
func (r *relay) pipe(dst, src net.Conn) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if d := time.Duration(r.delay.Load()); d > 0 {
				time.Sleep(d)
			}
			r.mu.Lock()
			wait := r.resume
			r.mu.Unlock()
			<-wait
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil { // io.EOF or a closed connection
			return
		}
	}
}
