package aerospiketest

import (
	"io"
	"net"
	"testing"

	as "github.com/aerospike/aerospike-client-go/v7"
)

// BenchmarkRawInfoRoundTrip is the baseline: one info request and answer over
// a raw TCP connection, no client library.
func BenchmarkRawInfoRoundTrip(b *testing.B) {
	s := startServer(b, Options{})
	conn, err := net.Dial("tcp", s.Addr())
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	req := frame(protoInfo, []byte("node\n"))
	resp := make([]byte, 8+len("node\t"+DefaultNodeName+"\n"))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := conn.Write(req); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(conn, resp); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkClientGet is a v7 client Get of a 1 KiB blob bin, in parallel.
func BenchmarkClientGet(b *testing.B) {
	s := startServer(b, Options{})
	c := newClient(b, s)
	k := key(b, "test", "bench", "profile")
	if err := c.Put(nil, k, as.BinMap{"p": make([]byte, 1024)}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := c.Get(nil, k); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkClientAdd is a v7 client Operate(AddOp) on one counter, in parallel.
func BenchmarkClientAdd(b *testing.B) {
	s := startServer(b, Options{})
	c := newClient(b, s)
	k := key(b, "test", "bench", "counter")
	op := as.AddOp(as.NewBin("n", 1))
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := c.Operate(nil, k, op); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
