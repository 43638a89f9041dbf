package bidder

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rtbd/rtbd/bidder/hostcpu"
)

// fakeMeter returns a meter whose CPUs, each time it is read, add the
// given idle, steal and total ticks (10 ms each).
func fakeMeter(unusable int, idle, steal, total *atomic.Uint64) *cpuMeter {
	var i, s, t uint64
	return &cpuMeter{unusable: unusable, tick: 10 * time.Millisecond,
		read: func() (uint64, uint64, uint64, error) {
			i, s, t = i+idle.Load(), s+steal.Load(), t+total.Load()
			return i, s, t, nil
		}}
}

func TestCPUMeter(t *testing.T) {
	var idle, steal, total atomic.Uint64
	// One CPU, read every 100 ms (10 ticks): 4 idle, 4 stolen.
	idle.Store(4)
	steal.Store(4)
	total.Store(10)
	m := fakeMeter(0, &idle, &steal, &total)
	now := time.Unix(1000, 0)
	if _, ok := m.sample(now); ok {
		t.Fatal("a room from one reading")
	}
	for i := 1; i <= 3; i++ {
		now = now.Add(100 * time.Millisecond)
		if room, ok := m.sample(now); !ok || room < 0.666 || room > 0.667 { // 4 idle of 6 run
			t.Fatalf("reading %d: room %v %v, want 4/6", i, room, ok)
		}
	}
	// Busy: no idle time, whatever the steal.
	idle.Store(0)
	steal.Store(5)
	for range meterWindow {
		now = now.Add(100 * time.Millisecond)
		m.sample(now)
	}
	if room, ok := m.sample(now.Add(100 * time.Millisecond)); !ok || room != 0 {
		t.Fatalf("busy: room %v %v, want 0", room, ok)
	}

	// Two allowed CPUs, GOMAXPROCS 1: the second CPU's idle time is no
	// room for the process.
	var i2, s2, t2 atomic.Uint64
	i2.Store(10) // per 100 ms of 2 CPUs (20 ticks): the spare CPU idle, the other busy
	t2.Store(20)
	m2 := fakeMeter(1, &i2, &s2, &t2)
	now = time.Unix(2000, 0)
	m2.sample(now)
	if room, ok := m2.sample(now.Add(100 * time.Millisecond)); !ok || room != 0 {
		t.Fatalf("GOMAXPROCS below the CPUs: room %v %v, want 0", room, ok)
	}
}

func TestSumTimes(t *testing.T) {
	ts := []hostcpu.Times{
		{CPU: 0, User: 1, System: 1, Idle: 40, IOWait: 2, Steal: 6},
		{CPU: 1, User: 9, System: 9, Idle: 60, IOWait: 3, Steal: 44},
		{CPU: 2, User: 1, Nice: 2, System: 3, Idle: 4},
	}
	// cpu1: idle 60+3, steal 44, total 125; cpu2: idle 4, total 10.
	if idle, steal, total := sumTimes(ts, map[int]bool{1: true, 2: true}); idle != 67 || steal != 44 || total != 135 {
		t.Fatalf("idle %d steal %d total %d, want 67 44 135", idle, steal, total)
	}
	if runtime.GOOS == "linux" {
		if m := newCPUMeter(); m == nil {
			t.Error("no CPU meter on Linux")
		} else if _, _, total, err := m.read(); err != nil || total == 0 {
			t.Errorf("reading /proc/stat: total %d, %v", total, err)
		}
	}
}

// TestAdmissionRoomOverridesRunQueue: goroutines waiting for a P make the
// run queue look busy, but when the CPUs had room (a hypervisor holding
// the vCPU back, then a backlog each time it runs) the queue is not shed;
// without room it is.
func TestAdmissionRoomOverridesRunQueue(t *testing.T) {
	var idle, steal, total atomic.Uint64
	total.Store(10)
	idle.Store(5) // half the time it ran, the CPU was idle
	a := NewAdmission(AdmissionOptions{Interval: 10 * time.Millisecond})
	a.meter = fakeMeter(0, &idle, &steal, &total)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go a.Run(ctx)
	defer spin(4 * runtime.GOMAXPROCS(0))()
	// Busy run queue, room on the CPUs: spare (checked over many windows).
	waitFor(t, 20*time.Second, "spare CPU with room reported", a.Spare)
	for range 50 {
		time.Sleep(10 * time.Millisecond)
		if !a.Spare() {
			t.Fatal("not spare while the meter reports room")
		}
	}
	idle.Store(0) // now no room: the run queue decides, and it is busy
	waitFor(t, 20*time.Second, "no spare CPU without room", func() bool { return !a.Spare() })
}
