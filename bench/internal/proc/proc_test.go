package proc

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"
)

func TestParseStat(t *testing.T) {
	line := "1234 (my (weird) prog) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 7 0 5000 100000 300 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0\n"
	s, err := ParseStat([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	if s.PID != 1234 || s.Comm != "my (weird) prog" || s.State != 'S' || s.UtimeTicks != 250 || s.StimeTicks != 75 || s.NumThreads != 7 {
		t.Fatalf("got %+v", s)
	}
	if got, want := s.CPU(), 3250*time.Millisecond; got != want {
		t.Fatalf("CPU = %v, want %v", got, want)
	}
	for _, bad := range []string{"", "12 prog S 1", "x (a) S 1 2 3", "12 (a) S 1 2 3", "12 (a) SS 0 0 0 0 0 0 0 0 0 0 1 2 0 0 0 0 7 0", "12 (a) S 0 0 0 0 0 0 0 0 0 0 x 2 0 0 0 0 7 0"} {
		if _, err := ParseStat([]byte(bad)); !errors.Is(err, ErrMalformed) {
			t.Errorf("ParseStat(%q) err = %v, want ErrMalformed", bad, err)
		}
	}
}

func TestReadSelf(t *testing.T) {
	pid := os.Getpid()
	// Burn a little CPU so the tick counters move.
	deadline := time.Now().Add(50 * time.Millisecond)
	x := 0
	for time.Now().Before(deadline) {
		x++
	}
	_ = x
	st, err := ReadStat(pid)
	if err != nil {
		t.Fatal(err)
	}
	if st.PID != pid || st.NumThreads < 1 {
		t.Fatalf("self stat = %+v", st)
	}
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
	hwm, err := PeakRSS(pid)
	if err != nil {
		t.Fatal(err)
	}
	status, err := ReadStatus(pid)
	if err != nil {
		t.Fatal(err)
	}
	if hwm < 1<<20 || status.VmRSSBytes < 1<<20 || status.VmRSSBytes > status.VmHWMBytes || status.Threads < 1 {
		t.Fatalf("VmHWM %d, status %+v", hwm, status)
	}
	// Grow the heap by 64 MiB touched memory: VmHWM must follow.
	buf := make([]byte, 64<<20)
	for i := range buf {
		if i%4096 == 0 {
			buf[i] = 1
		}
	}
	hwm2, err := PeakRSS(pid)
	if err != nil {
		t.Fatal(err)
	}
	if hwm2 < hwm+32<<20 {
		t.Fatalf("VmHWM after touching 64 MiB: %d, before %d", hwm2, hwm)
	}
	_ = buf[len(buf)-1]
	if _, err := ReadStat(1 << 30); err == nil {
		t.Fatal("ReadStat of a nonexistent pid: want error")
	}
}

func TestParseStatus(t *testing.T) {
	in := "Name:\tx\nVmPeak:\t  1000 kB\nVmHWM:\t    2048 kB\nVmRSS:\t    1024 kB\nThreads:\t9\n"
	st, err := ParseStatus(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if st.VmHWMBytes != 2048*1024 || st.VmRSSBytes != 1024*1024 || st.Threads != 9 || len(st.Missing) != 0 {
		t.Fatalf("got %+v", st)
	}
	st, err = ParseStatus(strings.NewReader("Name:\tkthread\nThreads:\t1\n"))
	if err != nil || len(st.Missing) != 2 {
		t.Fatalf("kernel thread: %+v %v", st, err)
	}
	for _, bad := range []string{"VmHWM:\tx kB\n", "VmHWM:\t12 MB\n", "VmRSS:\n", "Threads:\t-1\n"} {
		if _, err := ParseStatus(strings.NewReader(bad)); !errors.Is(err, ErrMalformed) {
			t.Errorf("ParseStatus(%q) err = %v", bad, err)
		}
	}
}

func TestParseNetTCP(t *testing.T) {
	in := `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 12345 1 0000000000000000 100 0 0 10 0
   1: 0100007F:1F90 0100007F:D431 01 00000000:00000000 00:00000000 00000000     0        0 12346 1 0000000000000000 20 4 30 10 -1
`
	var got []TCPEntry
	if err := ParseNetTCP(strings.NewReader(in), func(e TCPEntry) { got = append(got, e) }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("got %d entries", len(got))
	}
	want := TCPEntry{
		Local:  netip.MustParseAddrPort("127.0.0.1:8080"),
		Remote: netip.MustParseAddrPort("127.0.0.1:54321"),
		State:  StateEstablished,
		Inode:  12346,
	}
	if got[1] != want || got[0].State != StateListen {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	in6 := "  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n" +
		"   0: 00000000000000000000000001000000:1F90 00000000000000000000000001000000:D431 01 00000000:00000000 00:00000000 00000000     0        0 99 1 0000000000000000 20 4 0 10 -1\n"
	got = nil
	if err := ParseNetTCP(strings.NewReader(in6), func(e TCPEntry) { got = append(got, e) }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Local != netip.MustParseAddrPort("[::1]:8080") || got[0].Remote.Port() != 54321 {
		t.Fatalf("tcp6: %+v", got)
	}
	for _, bad := range []string{
		"   0: 0100007F:1F90 00000000:0000 0A\n",
		"   0: 0100007F 00000000:0000 0A 0 0 0 0 0 0 1\n",
		"   0: 0100007G:1F90 00000000:0000 0A 0 0 0 0 0 0 1\n",
		"   0: 0100007F:1F90 00000000:0000 ZZ 0 0 0 0 0 0 1\n",
		"   0: 0100007F:1F90 00000000:0000 0A 0 0 0 0 0 x\n",
	} {
		if err := ParseNetTCP(strings.NewReader(bad), func(TCPEntry) {}); !errors.Is(err, ErrMalformed) {
			t.Errorf("ParseNetTCP(%q) err = %v", bad, err)
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

func FuzzParseStat(f *testing.F) {
	f.Add([]byte("1234 (my (weird) prog) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 7 0 5000"))
	f.Add([]byte("1 () R"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ParseStat(b)
		if err == nil && s.CPU() < 0 && s.UtimeTicks < 1<<50 && s.StimeTicks < 1<<50 {
			t.Fatalf("negative CPU from %q", b)
		}
	})
}

func FuzzParseStatus(f *testing.F) {
	f.Add([]byte("VmHWM:\t2048 kB\nVmRSS:\t1024 kB\nThreads:\t3\n"))
	f.Add([]byte("VmHWM:"))
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := ParseStatus(strings.NewReader(string(b)))
		if err == nil && (st.VmHWMBytes < 0 || st.VmRSSBytes < 0 || st.Threads < 0) {
			t.Fatalf("negative size from %q: %+v", b, st)
		}
	})
}

func FuzzParseNetTCP(f *testing.F) {
	f.Add([]byte("  sl  local_address rem_address   st\n   0: 0100007F:1F90 0100007F:D431 01 00000000:00000000 00:00000000 00000000     0        0 12346 1\n"))
	f.Add([]byte("   0: 00000000000000000000000001000000:1F90 00000000000000000000000001000000:D431 01 0 0 0 0 0 99\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		_ = ParseNetTCP(strings.NewReader(string(b)), func(e TCPEntry) {
			if !e.Local.IsValid() || !e.Remote.IsValid() {
				t.Fatalf("invalid address accepted from %q", b)
			}
		})
	})
}
