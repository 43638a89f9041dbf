package bench

import (
	"os"
	"testing"
	"time"
)

func TestProcReaders(t *testing.T) {
	pid := os.Getpid()
	// Burn CPU until the tick counters moved (on a loaded machine 50 ms
	// of wall time may be a few ms of CPU).
	deadline := time.Now().Add(10 * time.Second)
	for c, _ := selfCPU(); c < 60*time.Millisecond && time.Now().Before(deadline); c, _ = selfCPU() {
		for i := 0; i < 1e5; i++ {
		}
	}
	cpu, err := procCPU(pid)
	if err != nil {
		t.Fatal(err)
	}
	self, err := selfCPU()
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
	status, err := readStatus(pid)
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
	status2, err := readStatus(pid)
	if err != nil {
		t.Fatal(err)
	}
	if status2.VmHWMBytes < status.VmHWMBytes+32<<20 {
		t.Fatalf("VmHWM after touching 64 MiB: %d, before %d", status2.VmHWMBytes, status.VmHWMBytes)
	}
	_ = buf[len(buf)-1]
	if _, err := procCPU(1 << 30); err == nil {
		t.Fatal("CPU of a nonexistent pid: want error")
	}
	if _, err := readStatus(1 << 30); err == nil {
		t.Fatal("ReadStatus of a nonexistent pid: want error")
	}
}
