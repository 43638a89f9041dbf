package proc

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/prometheus/procfs"
)

// A /proc/stat of a 2-vCPU guest, trimmed, CPUs out of order.
const sampleStat = `cpu  4278382 2296 1083308 3743489 32649 0 134275 288318 0 0
cpu1 2156533 1205 549210 1832770 20588 0 74974 147952 0 0
cpu0 2121848 1090 534098 1910718 12061 0 59300 140366 0 0
intr 166074542 0 0 0
ctxt 421663678
btime 1764470415
processes 100
procs_running 1
procs_blocked 0
softirq 1 0 0 0 0 0 0 0 0 0 0
`

func TestHostCPUs(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "stat"), []byte(sampleStat), 0o644); err != nil {
		t.Fatal(err)
	}
	fs, err := procfs.NewFS(dir)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := hostCPUs(fs)
	if err != nil {
		t.Fatal(err)
	}
	// USER_HZ is 100: ticks / 100 = seconds.
	want := []CPUTimes{
		{CPU: 0, User: 21218.48, Nice: 10.90, System: 5340.98, Idle: 19107.18, IOWait: 120.61, SoftIRQ: 593.00, Steal: 1403.66},
		{CPU: 1, User: 21565.33, Nice: 12.05, System: 5492.10, Idle: 18327.70, IOWait: 205.88, SoftIRQ: 749.74, Steal: 1479.52},
	}
	if len(cs) != len(want) {
		t.Fatalf("%d CPUs, want %d: %+v", len(cs), len(want), cs)
	}
	for i := range want {
		if cs[i] != want[i] {
			t.Errorf("cpu %d: %+v, want %+v", i, cs[i], want[i])
		}
	}
	d := cs[1].Sub(cs[0])
	if d.CPU != 1 || d.User != cs[1].User-cs[0].User || d.Idle != 0 || d.Steal != cs[1].Steal-cs[0].Steal {
		t.Errorf("Sub: %+v (a state that went backwards must be 0)", d)
	}
	if got, want := want[0].Total(), want[0].Busy()+want[0].Idle+want[0].IOWait+want[0].Steal; got != want {
		t.Errorf("Total %v != busy + idle + iowait + steal %v", got, want)
	}
	if s := cs[0].Add(cs[1]); s.CPU != 0 || s.Steal != cs[0].Steal+cs[1].Steal || s.Total() != cs[0].Total()+cs[1].Total() {
		t.Errorf("Add: %+v", s)
	}
	if err := os.WriteFile(filepath.Join(dir, "stat"), []byte("cpu0 1 x 3 4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := hostCPUs(fs); err == nil {
		t.Error("a malformed /proc/stat: no error")
	}
}

// The host's own /proc/stat reads, with every CPU's time going forward.
func TestHostCPUsLive(t *testing.T) {
	if _, err := os.Stat("/proc/stat"); err != nil {
		t.Skip("no /proc/stat:", err)
	}
	cs, err := HostCPUs()
	if err != nil || len(cs) == 0 {
		t.Fatalf("HostCPUs: %d CPUs, %v", len(cs), err)
	}
	for _, c := range cs {
		if c.Total() <= 0 {
			t.Errorf("cpu %d: total %v", c.CPU, c.Total())
		}
	}
}
