//go:build !race

package token

import (
	"syscall"
	"testing"
	"time"
)

// TestAllocations pins Append, AppendBid and Parse at zero allocations
// with buffers that have room (the bidder signs each bid once, AppendBid),
// also for a markup token with 15 products parsed as a click into a Token
// whose Products has capacity, and for a version 4 token.
func TestAllocations(t *testing.T) {
	k := mustKeys(t, key1, key2)
	tt := sample()
	dst := make([]byte, 0, 1024)
	tok, _ := k.Append(nil, &tt)
	buf := make([]byte, 0, 1024)
	var got Token
	if n := testing.AllocsPerRun(100, func() { dst, _ = k.Append(dst[:0], &tt) }); n != 0 {
		t.Errorf("Append: %v allocs, want 0", n)
	}
	if n := testing.AllocsPerRun(100, func() { buf, _ = k.Parse(&got, tok, KindWin, tt.Issued, buf) }); n != 0 {
		t.Errorf("Parse: %v allocs, want 0", n)
	}
	click := sample()
	click.Kind, click.Group = KindClick, 3
	for i := range 15 {
		click.Products = append(click.Products, int64(100_000+i))
	}
	if n := testing.AllocsPerRun(100, func() { dst, _ = k.Append(dst[:0], &click) }); n != 0 {
		t.Errorf("Append click: %v allocs, want 0", n)
	}
	mid := 0
	if n := testing.AllocsPerRun(100, func() { dst, mid, _ = k.AppendBid(dst[:0], &click) }); n != 0 || mid == 0 {
		t.Errorf("AppendBid: %v allocs, want 0", n)
	}
	both, mid, _ := k.AppendBid(nil, &click)
	ctok := both[mid:]
	got.Products = make([]int64, 0, 16)
	var err error
	if n := testing.AllocsPerRun(100, func() { buf, err = k.Parse(&got, ctok, KindClick, click.Issued, buf) }); n != 0 || err != nil {
		t.Errorf("Parse click: %v allocs (%v), want 0", n, err)
	}
	var nonce [16]byte
	old := sample() // no nonce: derived
	if n := testing.AllocsPerRun(100, func() { nonce = old.NoticeNonce() }); n != 0 || nonce == ([16]byte{}) {
		t.Errorf("NoticeNonce: %v allocs (nonce %x), want 0", n, nonce)
	}
	if len(got.Products) != 15 || got.Products[14] != 100_014 {
		t.Errorf("Parse click: products %v", got.Products)
	}
	v4 := []byte(resign(payloadV4(&tt)))
	if n := testing.AllocsPerRun(100, func() { buf, err = k.Parse(&got, v4, KindWin, tt.Issued, buf) }); n != 0 || err != nil {
		t.Errorf("Parse version 4: %v allocs (%v), want 0", n, err)
	}
}

func BenchmarkAppend(b *testing.B) {
	k := mustKeys(b, key1)
	tt := sample()
	dst := make([]byte, 0, 1024)
	b.ReportAllocs()
	for b.Loop() {
		dst, _ = k.Append(dst[:0], &tt)
	}
}

// BenchmarkBidTokens is the signing of one bid's URLs: "per-bid" is
// AppendBid (both tokens, one HMAC); "per-url" is a token per URL, the
// way to sign them without AppendBid: win, bill, loss and the click links
// (4 HMACs; a native or video bid has a fifth, its impression tracker).
// cpu-ns/op is the process's CPU time per bid, steadier than ns/op on a
// shared machine.
func BenchmarkBidTokens(b *testing.B) {
	k := mustKeys(b, key1)
	tt := sample()
	tt.ClickExpires, tt.Group, tt.Products = tt.Issued.Add(720*time.Hour), 3, []int64{100_001, 100_002, 100_003, 100_004}
	dst := make([]byte, 0, 4096)
	b.Run("per-bid", func(b *testing.B) {
		b.ReportAllocs()
		cpu := cpuNanos()
		for b.Loop() {
			dst, _, _ = k.AppendBid(dst[:0], &tt)
		}
		b.ReportMetric(float64(cpuNanos()-cpu)/float64(b.N), "cpu-ns/op")
	})
	b.Run("per-url", func(b *testing.B) {
		b.ReportAllocs()
		cpu := cpuNanos()
		for b.Loop() {
			dst = dst[:0]
			for _, kind := range [...]Kind{KindWin, KindBill, KindLoss, KindClick} {
				tt.Kind = kind
				dst, _ = k.Append(dst, &tt)
			}
		}
		b.ReportMetric(float64(cpuNanos()-cpu)/float64(b.N), "cpu-ns/op")
	})
}

// cpuNanos is the process's user+system CPU time.
func cpuNanos() int64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

func BenchmarkParse(b *testing.B) {
	k := mustKeys(b, key1)
	tt := sample()
	tok, _ := k.Append(nil, &tt)
	buf := make([]byte, 0, 1024)
	var got Token
	b.ReportAllocs()
	for b.Loop() {
		buf, _ = k.Parse(&got, tok, KindWin, tt.Issued, buf)
	}
}

func TestSignedUIDAllocs(t *testing.T) {
	k := mustKeys(t, []byte("0123456789abcdef0123456789abcdef"))
	now := time.Unix(1_800_000_000, 0)
	s, _ := k.AppendUID(nil, "user-42", now.Add(time.Hour))
	buf := make([]byte, 0, 256)
	if n := testing.AllocsPerRun(100, func() {
		_, buf, _ = k.ParseUID(s, now, buf[:0])
	}); n != 0 {
		t.Errorf("ParseUID allocates %v times", n)
	}
}
