//go:build !race

package fraud_test

import (
	"testing"
	"time"

	"github.com/rtbd/rtbd/bidder/fraud"
	"github.com/rtbd/rtbd/bidder/spend/spendtest"
)

// TestCheckAllocs pins Check at zero allocations, hits and misses,
// upper-case input and IPv6 included.
func TestCheckAllocs(t *testing.T) {
	_, _, l := startFilled(t, spendtest.RedisOptions{}, fraud.Options{CheckInterval: time.Hour})
	for _, c := range [][5]string{
		{"WWW.BAD.COM", "", "", "", ""},
		{"deep.sub.domain.good.example.org", "Com.Good.App", "2001:db8:1::1", "ABCD-ef", "human"},
		{"", "", "203.0.113.5", "", ""},
		{"", "", "8.8.8.8", "", "bot"},
	} {
		if n := testing.AllocsPerRun(500, func() { l.Check(c[0], c[1], c[2], c[3], c[4]) }); n != 0 {
			t.Errorf("Check%v: %v allocations, want 0", c, n)
		}
	}
}

func BenchmarkCheck(b *testing.B) {
	_, _, l := startFilled(b, spendtest.RedisOptions{}, fraud.Options{CheckInterval: time.Hour})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			l.Check("www.some.publisher.com", "com.good.app", "2001:db8:1::1", "abcd", "user-123")
		}
	})
}
