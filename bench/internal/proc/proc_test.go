package proc

import (
	"net"
	"net/netip"
	"os"
	"testing"
	"time"
)

func TestReadSelf(t *testing.T) {
	pid := os.Getpid()
	// Burn a little CPU so the tick counters move.
	deadline := time.Now().Add(50 * time.Millisecond)
	x := 0
	for time.Now().Before(deadline) {
		x++
	}
	_ = x
	cpu, err := CPU(pid)
	if err != nil {
		t.Fatal(err)
	}
	self, err := SelfCPU()
	if err != nil {
		t.Fatal(err)
	}
	if cpu <= 0 || self <= 0 {
		t.Fatalf("cpu from stat %v, from rusage %v: want > 0", cpu, self)
	}
	// The two clocks measure the same process: they agree within the 10 ms
	// tick plus what ran between the two reads (generous bound).
	if d := self - cpu; d < -20*time.Millisecond || d > time.Second {
		t.Fatalf("rusage %v vs /proc stat %v differ by %v", self, cpu, d)
	}
	status, err := ReadStatus(pid)
	if err != nil {
		t.Fatal(err)
	}
	if status.VmHWMBytes < 1<<20 || status.VmRSSBytes < 1<<20 || status.VmRSSBytes > status.VmHWMBytes {
		t.Fatalf("status %+v", status)
	}
	// Grow the heap by 64 MiB touched memory: VmHWM must follow.
	buf := make([]byte, 64<<20)
	for i := range buf {
		if i%4096 == 0 {
			buf[i] = 1
		}
	}
	status2, err := ReadStatus(pid)
	if err != nil {
		t.Fatal(err)
	}
	if status2.VmHWMBytes < status.VmHWMBytes+32<<20 {
		t.Fatalf("VmHWM after touching 64 MiB: %d, before %d", status2.VmHWMBytes, status.VmHWMBytes)
	}
	_ = buf[len(buf)-1]
	if _, err := CPU(1 << 30); err == nil {
		t.Fatal("CPU of a nonexistent pid: want error")
	}
	if _, err := ReadStatus(1 << 30); err == nil {
		t.Fatal("ReadStatus of a nonexistent pid: want error")
	}
}

func TestFilterMatch(t *testing.T) {
	e := TCPEntry{Local: netip.MustParseAddrPort("127.0.0.1:8080"), Remote: netip.MustParseAddrPort("127.0.0.1:54321")}
	e6 := TCPEntry{Local: netip.MustParseAddrPort("[::ffff:10.0.0.1]:9000"), Remote: netip.MustParseAddrPort("[::ffff:127.0.0.1]:8080")}
	for _, c := range []struct {
		f     TCPFilter
		e     TCPEntry
		match bool
	}{
		{TCPFilter{}, e, true},
		{TCPFilter{LocalPortMin: 8080}, e, true},
		{TCPFilter{LocalPortMin: 8081}, e, false},
		{TCPFilter{LocalPortMin: 8000, LocalPortMax: 8080}, e, true},
		{TCPFilter{LocalPortMin: 8000, LocalPortMax: 8079}, e, false},
		{TCPFilter{RemotePort: 54321, Loopback: true}, e, true},
		{TCPFilter{RemotePort: 54320}, e, false},
		{TCPFilter{RemotePort: 8080, Loopback: true}, e6, true},
		{TCPFilter{Loopback: true}, TCPEntry{Remote: netip.MustParseAddrPort("10.0.0.2:80")}, false},
	} {
		if got := c.f.Match(c.e); got != c.match {
			t.Errorf("%s matches %v: %v, want %v", c.f, c.e, got, c.match)
		}
	}
}

// TestCountEstablished counts the connections to this process's own listening
// socket, from both ends.
func TestCountEstablished(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := uint16(ln.Addr().(*net.TCPAddr).Port)
	accepted := make(chan net.Conn, 8)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	const n = 3
	var conns []net.Conn
	for i := 0; i < n; i++ {
		c, err := net.DialTimeout("tcp", ln.Addr().String(), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		select {
		case s := <-accepted:
			conns = append(conns, s)
		case <-time.After(5 * time.Second):
			t.Fatal("accept timed out")
		}
	}
	server := TCPFilter{LocalPortMin: port}
	client := TCPFilter{RemotePort: port, Loopback: true}
	if got, err := CountEstablished(server); err != nil || got != n {
		t.Fatalf("server side (%s): %d, %v; want %d", server, got, err, n)
	}
	if got, err := CountEstablished(client); err != nil || got != n {
		t.Fatalf("client side (%s): %d, %v; want %d", client, got, err, n)
	}
	if got, err := CountEstablished(TCPFilter{LocalPortMin: port, RemotePort: port}); err != nil || got != 0 {
		t.Fatalf("both conditions: %d, %v; want 0", got, err)
	}
	// Close the client ends: the count to the port drops (bounded wait).
	for i := 0; i < len(conns); i += 2 {
		conns[i].Close()
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		got, err := CountEstablished(client)
		if err != nil {
			t.Fatal(err)
		}
		if got == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("client sockets still ESTABLISHED after close: %d", got)
		}
		time.Sleep(10 * time.Millisecond)
	}
	for i := 1; i < len(conns); i += 2 {
		conns[i].Close()
	}
	if s := (TCPFilter{LocalPortMin: 1000, LocalPortMax: 2000, RemotePort: 80, Loopback: true}).String(); s != "local:1000-2000 remote:80 loopback" {
		t.Fatalf("String() = %q", s)
	}
}
