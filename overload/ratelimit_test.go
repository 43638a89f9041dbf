package overload

import (
	"encoding/binary"
	"net/netip"
	"sync"
	"testing"
	"time"
)

func key(i uint32) Key {
	var a [4]byte
	binary.BigEndian.PutUint32(a[:], i)
	return KeyOf(netip.AddrFrom4(a))
}

// A source gets Burst requests at once, then one per 1/Rate; another
// source has its own bucket.
func TestBurstThenRate(t *testing.T) {
	l := NewLimiter(Limit{Rate: 10, Burst: 5}, 1024)
	now := time.Now().UnixNano()
	a, b := key(1), key(2)
	for i := range 5 {
		if !l.Allow(a, now) {
			t.Fatalf("request %d of the burst refused", i+1)
		}
	}
	if l.Allow(a, now) {
		t.Fatal("request 6 at once allowed with burst 5")
	}
	if !l.Allow(b, now) {
		t.Fatal("another source refused")
	}
	// 100ms later (rate 10/s) one more, not two.
	now += int64(100 * time.Millisecond)
	if !l.Allow(a, now) {
		t.Fatal("refused after one refill interval")
	}
	if l.Allow(a, now) {
		t.Fatal("two allowed after one refill interval")
	}
	// After a full refill, the whole burst again.
	now += int64(time.Second)
	for i := range 5 {
		if !l.Allow(a, now) {
			t.Fatalf("after refill: request %d refused", i+1)
		}
	}
	if st := l.Stats(); st.Allowed != 12 || st.Limited != 2 {
		t.Fatalf("stats %+v, want 12 allowed, 2 limited", st)
	}
}

// IPv4 and its IPv4-mapped IPv6 form are one source.
func TestMappedIsSameSource(t *testing.T) {
	l := NewLimiter(Limit{Rate: 1, Burst: 1}, 1024)
	now := time.Now().UnixNano()
	if !l.Allow(KeyOf(netip.MustParseAddr("192.0.2.1")), now) {
		t.Fatal("first refused")
	}
	if l.Allow(KeyOf(netip.MustParseAddr("::ffff:192.0.2.1")), now) {
		t.Fatal("the mapped form has a bucket of its own")
	}
}

// However many sources ask, the table holds at most Sources of them, and a
// limited source that stays active keeps its bucket while the others are
// ones that came once (their buckets full again).
func TestTableBounded(t *testing.T) {
	l := NewLimiter(Limit{Rate: 1, Burst: 2}, 1024)
	if l.Sources() != 1024 {
		t.Fatalf("Sources %d, want 1024", l.Sources())
	}
	now := time.Now().UnixNano()
	flood := key(0)
	for l.Allow(flood, now) {
	}
	for i := uint32(1); i <= 1_000_000; i++ {
		// Each source comes once, 1s apart from the next: by the time
		// the table is full, the older ones have refilled.
		now += int64(time.Second)
		l.Allow(key(i), now)
		if i%1000 == 0 {
			for l.Allow(flood, now) {
			}
		}
	}
	if h := l.Held(); h > l.Sources() {
		t.Fatalf("held %d sources, table of %d", h, l.Sources())
	}
	if l.Allow(flood, now) {
		t.Fatal("the flooding source lost its empty bucket to sources that came once")
	}
	if st := l.Stats(); st.Evicted != 0 {
		t.Fatalf("evicted %d buckets that were not full", st.Evicted)
	}
}

// When more sources are active at once than the table holds, it stays
// bounded and counts the buckets it forgot.
func TestTableBoundedUnderManyActiveSources(t *testing.T) {
	l := NewLimiter(Limit{Rate: 1, Burst: 1}, 1024)
	now := time.Now().UnixNano()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range uint32(100_000) {
				l.Allow(key(uint32(g)<<24|i), now)
			}
		}()
	}
	wg.Wait()
	if h := l.Held(); h != l.Sources() {
		t.Fatalf("held %d, want the full table of %d", h, l.Sources())
	}
	if st := l.Stats(); st.Evicted < 400_000-uint64(l.Sources()) {
		t.Fatalf("evicted %d, want about %d", st.Evicted, 400_000-l.Sources())
	}
}

func TestNilAllows(t *testing.T) {
	var l *Limiter = NewLimiter(Limit{}, 1024)
	if l != nil {
		t.Fatal("rate 0 is not nil")
	}
	if !l.Allow(key(1), 0) || l.Held() != 0 || l.Sources() != 0 {
		t.Fatal("nil limiter limited")
	}
}

func TestAllowAllocatesNothing(t *testing.T) {
	l := NewLimiter(Limit{Rate: 1e6, Burst: 10}, 1024)
	k := key(7)
	now := time.Now().UnixNano()
	if n := testing.AllocsPerRun(1000, func() { l.Allow(k, now) }); n != 0 {
		t.Fatalf("Allow allocates %v", n)
	}
}

func BenchmarkAllow(b *testing.B) {
	l := NewLimiter(Limit{Rate: 100, Burst: 200}, 65536)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := uint32(0)
		for pb.Next() {
			i++
			l.Allow(key(i&0xffff), time.Now().UnixNano())
		}
	})
}
