package bidder

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// drainServer serves f's bidder as rtbd does (NewServer on a Listen
// listener on 127.0.0.1) and returns its address.
func drainServer(t *testing.T, f *fixture) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := f.b.NewServer()
	srv.ReadTimeout = 10 * time.Second
	done := make(chan struct{})
	go func() { srv.Serve(Listen(ln)); close(done) }()
	t.Cleanup(func() {
		srv.Shutdown()
		<-done
	})
	return ln.Addr().String()
}

// dial connects to addr, with a deadline for the whole exchange.
func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(30 * time.Second))
	return c
}

// TestOversizedBodyReadable413: a body far over max_body_bytes (past
// fasthttp's backstop), sent whole without Expect by a client that reads
// only after writing, gets a readable 413 status line, not a reset; with
// Expect: 100-continue and an oversized Content-Length, 413 and no
// 100 Continue.
func TestOversizedBodyReadable413(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.MaxBodyBytes = 256 << 10 }) // backstop 1 MiB
	addr := drainServer(t, f)
	for _, size := range []int{1 << 20, 4 << 20, 16 << 20} {
		t.Run(fmt.Sprintf("%dMiB", size>>20), func(t *testing.T) {
			c := dial(t, addr)
			fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", PathBid, size)
			chunk := bytes.Repeat([]byte(" "), 64<<10)
			for sent := 0; sent < size; sent += len(chunk) {
				if _, err := c.Write(chunk); err != nil {
					t.Fatalf("write after %d bytes: %v", sent, err)
				}
			}
			line, err := bufio.NewReader(c).ReadString('\n')
			if err != nil {
				t.Fatalf("reading the status line: %v", err)
			}
			if !strings.HasPrefix(line, "HTTP/1.1 413 ") {
				t.Fatalf("status line %q, want 413", line)
			}
		})
	}
	t.Run("expect", func(t *testing.T) {
		c := dial(t, addr)
		fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: %d\r\n\r\n", PathBid, 256<<10+1)
		all, err := io.ReadAll(c) // the server closes after its answer
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(all, []byte("HTTP/1.1 413 ")) || bytes.Contains(all, []byte("100 Continue")) {
			t.Fatalf("answer %q, want a 413 and no 100 Continue", all)
		}
	})
	t.Run("expect within limit", func(t *testing.T) {
		c := dial(t, addr)
		fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n", PathBid)
		line, err := bufio.NewReader(c).ReadString('\n')
		if err != nil || !strings.HasPrefix(line, "HTTP/1.1 100 ") {
			t.Fatalf("status line %q (%v), want 100 Continue", line, err)
		}
	})
}
