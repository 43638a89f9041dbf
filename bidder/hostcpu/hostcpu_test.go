package hostcpu

import (
	"errors"
	"strings"
	"testing"
)

// A /proc/stat of a 2-vCPU guest (values from this machine), trimmed.
const sampleStat = `cpu  4278382 2296 1083308 3743489 32649 0 134275 288318 0 0
cpu0 2121848 1090 534098 1910718 12061 0 59300 140366 0 0
cpu1 2156533 1205 549210 1832770 20588 0 74974 147952 0 0
intr 166074542 0 0 0
ctxt 421663678
btime 1764470415
`

func TestParse(t *testing.T) {
	cs, err := Parse(strings.NewReader(sampleStat))
	if err != nil {
		t.Fatal(err)
	}
	want := []Times{
		{CPU: 0, User: 2121848, Nice: 1090, System: 534098, Idle: 1910718, IOWait: 12061, SoftIRQ: 59300, Steal: 140366},
		{CPU: 1, User: 2156533, Nice: 1205, System: 549210, Idle: 1832770, IOWait: 20588, SoftIRQ: 74974, Steal: 147952},
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
	if d.User != 2156533-2121848 || d.Idle != 0 || d.Steal != 147952-140366 {
		t.Errorf("Sub: %+v (a field that went backwards must be 0)", d)
	}
	if got := want[0].Total(); got != want[0].Busy()+want[0].Idle+want[0].IOWait+want[0].Steal {
		t.Errorf("Total %d != busy + idle + iowait + steal", got)
	}
	// A kernel older than 2.6.11 prints four values: the rest are 0.
	old, err := Parse(strings.NewReader("cpu0 1 2 3 4\n"))
	if err != nil || len(old) != 1 || old[0].Steal != 0 || old[0].Idle != 4 {
		t.Errorf("short line: %+v, %v", old, err)
	}
	for _, bad := range []string{"cpu0 1 2 3\n", "cpu0 1 x 3 4\n", "cpuX 1 2 3 4\n", "cpu-1 1 2 3 4\n", "cpu0 1 2 3 -4\n"} {
		if _, err := Parse(strings.NewReader(bad)); !errors.Is(err, ErrMalformed) {
			t.Errorf("%q: err %v, want ErrMalformed", bad, err)
		}
	}
}

func TestRead(t *testing.T) {
	cs, err := Read()
	if err != nil {
		t.Skipf("no /proc/stat here: %v", err)
	}
	if len(cs) == 0 {
		t.Fatal("no cpuN lines in /proc/stat")
	}
	for _, c := range cs {
		if c.Total() == 0 {
			t.Errorf("cpu%d: no time at all: %+v", c.CPU, c)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(sampleStat))
	f.Add([]byte("cpu0 1 2 3 4\ncpu1 18446744073709551615 0 0 0 0 0 0 1\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		cs, err := Parse(strings.NewReader(string(b)))
		if err == nil {
			for _, c := range cs {
				if c.CPU < 0 {
					t.Fatalf("negative CPU number from %q", b)
				}
				_ = c.Sub(c)
			}
		}
	})
}
