package netfaulttest

import (
	"net"
	"syscall"
	"testing"
	"time"
)

// RaiseFileLimit raises the soft limit of open files to at least n (up to
// the hard limit), or skips the test saying why: a flood of connections
// needs a descriptor for each of them in the test process.
func RaiseFileLimit(t testing.TB, n uint64) {
	t.Helper()
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Skipf("SKIPPED: getrlimit: %v", err)
	}
	if lim.Cur >= n {
		return
	}
	if lim.Max < n {
		t.Skipf("SKIPPED: needs %d open files, the hard limit is %d (ulimit -Hn)", n, lim.Max)
	}
	lim.Cur = n
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Skipf("SKIPPED: cannot raise the open files limit to %d: %v", n, err)
	}
}

// SilentFlood opens n TCP connections to addr from the loopback addresses
// froms (round robin) that send nothing, and returns them; they are closed
// when the test ends. A connection the server closes at once still
// counts: the flood waits for nothing but the connect.
func SilentFlood(t testing.TB, addr string, n int, froms ...string) []net.Conn {
	t.Helper()
	conns := make([]net.Conn, 0, n)
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	for i := range n {
		from := froms[i%len(froms)]
		d := net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
		c, err := d.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("silent connection %d from %s: %v", i, from, err)
		}
		conns = append(conns, c)
	}
	return conns
}
