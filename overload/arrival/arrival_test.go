package arrival_test

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rtbd/rtbd/overload/arrival"
)

// pair returns a stamped server side and its client, on loopback.
func pair(t testing.TB) (server, client net.Conn) {
	t.Helper()
	if !arrival.Supported {
		t.Skip("this build does not stamp connections (not Linux, or -race)")
	}
	stop, ok := arrival.Probe(10 * time.Second)
	t.Cleanup(stop)
	if !ok {
		t.Fatal("the kernel did not stamp a probe connection's reads within 10 s")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sl := arrival.Listen(ln)
	t.Cleanup(func() { sl.Close() })
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server, err = sl.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	return server, client
}

// The stamp lies between the client's write and the server's read, and
// stays with the newest bytes: bytes that waited in the socket show their
// wait.
func TestReadStampsArrival(t *testing.T) {
	s, c := pair(t)
	if _, ok := arrival.Time(s); ok {
		t.Fatal("stamp before any read")
	}
	buf := make([]byte, 64)
	for i := range 3 {
		before := time.Now()
		if _, err := c.Write([]byte("hello")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(30 * time.Millisecond) // the bytes wait in the socket
		n, err := s.Read(buf)
		after := time.Now()
		if err != nil || string(buf[:n]) != "hello" {
			t.Fatalf("read %d: %q, %v", i, buf[:n], err)
		}
		at, ok := arrival.Time(s)
		if !ok {
			t.Fatalf("read %d: no stamp", i)
		}
		if at.Before(before) || at.After(after) {
			t.Fatalf("read %d: stamp %v not between the write (%v) and the read (%v)", i, at, before, after)
		}
		if waited := after.Sub(at); waited < 20*time.Millisecond { // 30 ms less the time the kernel may take to deliver
			t.Fatalf("read %d: bytes waited %v in the socket, the test slept 30ms before reading", i, waited)
		}
	}
}

// A large stream reads back intact through recvmsg, stamped.
func TestReadLargeStream(t *testing.T) {
	s, c := pair(t)
	want := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	go func() { c.Write(want); c.Close() }()
	got, err := io.ReadAll(s)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes (%v), want %d", len(got), err, len(want))
	}
	if _, ok := arrival.Time(s); !ok {
		t.Fatal("no stamp after a stream")
	}
}

// A short read (the first byte of a request, as fasthttp's server reads
// it) receives what is there; the next reads get the rest, in order, with
// the stamp of the bytes they return, and then read the socket again.
func TestShortReadThenRest(t *testing.T) {
	s, c := pair(t)
	for round := range 3 {
		want := bytes.Repeat([]byte{byte('a' + round)}, 10_000) // more than the short read's buffer
		want[0] = '<'
		if _, err := c.Write(want); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond) // all of it in the socket
		first := make([]byte, 1)
		if n, err := s.Read(first); n != 1 || err != nil || first[0] != '<' {
			t.Fatalf("round %d: first byte %q, %d, %v", round, first, n, err)
		}
		at, ok := arrival.Time(s)
		if !ok {
			t.Fatalf("round %d: no stamp", round)
		}
		got := append([]byte(nil), first...)
		buf := make([]byte, 700)
		for len(got) < len(want) {
			n, err := s.Read(buf)
			if err != nil {
				t.Fatalf("round %d: after %d bytes: %v", round, len(got), err)
			}
			got = append(got, buf[:n]...)
			if len(got) < 4096 { // still from what the short read received
				if again, _ := arrival.Time(s); !again.Equal(at) {
					t.Fatalf("round %d: stamp changed from %v to %v within one receive", round, at, again)
				}
			}
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("round %d: read %d bytes, not what was written", round, len(got))
		}
	}
	// Short reads of a stream that ends: every byte, then EOF.
	go func() { c.Write([]byte("xyz")); c.Close() }()
	var got []byte
	one := make([]byte, 1)
	for {
		n, err := s.Read(one)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, one[:n]...)
	}
	if string(got) != "xyz" {
		t.Fatalf("short reads to EOF: %q", got)
	}
}

// EOF, a deadline and Close from another goroutine surface as a net.Conn's
// errors would.
func TestReadErrors(t *testing.T) {
	s, c := pair(t)
	buf := make([]byte, 8)

	s.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	_, err := s.Read(buf)
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read past the deadline: %v, want a timeout", err)
	}
	s.SetReadDeadline(time.Time{})

	done := make(chan error, 1)
	go func() { _, err := s.Read(buf); done <- err }()
	time.Sleep(10 * time.Millisecond)
	c.Close()
	if err := <-done; err != io.EOF {
		t.Fatalf("read after the peer closed: %v, want io.EOF", err)
	}

	s2, _ := pair(t)
	go func() { time.Sleep(10 * time.Millisecond); s2.Close() }()
	if _, err := s2.Read(buf); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("read on a closed conn: %v, want net.ErrClosed", err)
	}
	if n, err := s.Read(nil); n != 0 || err != nil {
		t.Fatalf("empty read: %d, %v", n, err)
	}
}

// A stamped read and a write allocate nothing (the bid request comes in
// and its response goes out through them), a short read and the read of
// the rest neither.
func TestReadWriteAllocs(t *testing.T) {
	s, c := pair(t)
	msg, buf, big := []byte("xy"), make([]byte, 1), make([]byte, 128)
	allocs := testing.AllocsPerRun(200, func() {
		c.Write(msg)
		if _, err := s.Read(buf); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Read(big); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Write(msg); err != nil {
			t.Fatal(err)
		}
		c.Read(buf)
	})
	if allocs != 0 {
		t.Fatalf("%.1f allocations per read and write, want 0", allocs)
	}
}

// Write sends a stream larger than the socket buffers whole (the writer
// waits for the reader through the poller, EAGAIN and all).
func TestWriteLargeStream(t *testing.T) {
	s, c := pair(t)
	want := bytes.Repeat([]byte("0123456789abcdef"), 1<<18) // 4 MiB
	got := make(chan []byte)
	go func() { b, _ := io.ReadAll(c); got <- b }()
	time.Sleep(20 * time.Millisecond) // the buffers fill before the reader reads
	if n, err := s.Write(want); n != len(want) || err != nil {
		t.Fatalf("wrote %d of %d bytes: %v", n, len(want), err)
	}
	s.Close()
	if b := <-got; !bytes.Equal(b, want) {
		t.Fatalf("the reader got %d bytes, want the %d written", len(b), len(want))
	}
}

// A write deadline, a peer gone and Close surface as a net.Conn's errors
// would; a partial write reports what it sent.
func TestWriteErrors(t *testing.T) {
	s, c := pair(t)
	big := make([]byte, 64<<20) // more than the socket buffers take: the reader never reads
	s.SetWriteDeadline(time.Now().Add(50 * time.Millisecond))
	n, err := s.Write(big)
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() || !errors.Is(err, os.ErrDeadlineExceeded) || n <= 0 || n >= len(big) {
		t.Fatalf("write past the deadline: %d bytes, %v; want some bytes and a timeout", n, err)
	}
	s.SetWriteDeadline(time.Time{})

	c.(*net.TCPConn).SetLinger(0) // close with a reset
	c.Close()
	time.Sleep(20 * time.Millisecond)
	var werr error
	for range 10 { // the first write after a reset may still be accepted
		if _, werr = s.Write([]byte("x")); werr != nil {
			break
		}
	}
	var op *net.OpError
	if !errors.As(werr, &op) || op.Op != "write" {
		t.Fatalf("write to a reset peer: %v, want a write *net.OpError", werr)
	}

	s2, _ := pair(t)
	s2.Close()
	if _, err := s2.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("write on a closed conn: %v, want net.ErrClosed", err)
	}
	if n, err := s.Write(nil); n != 0 || err != nil {
		t.Fatalf("empty write: %d, %v", n, err)
	}
}

// Listeners and connections this package cannot stamp pass through.
func TestUnstampedPassThrough(t *testing.T) {
	if _, ok := arrival.Time(nil); ok {
		t.Fatal("nil conn stamped")
	}
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if _, ok := arrival.Time(a); ok {
		t.Fatal("pipe stamped")
	}
	ul, err := net.Listen("unix", filepath.Join(t.TempDir(), "s"))
	if err != nil {
		t.Skip("no unix sockets:", err)
	}
	defer ul.Close()
	if got := arrival.Listen(ul); got != ul {
		t.Fatalf("unix listener wrapped: %T", got)
	}
}
