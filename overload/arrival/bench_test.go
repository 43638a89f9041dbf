package arrival_test

import (
	"net"
	"syscall"
	"testing"
)

// BenchmarkRead is what a stamped read costs against a plain one, on
// loopback: the client writes a 1 KiB request, the server side reads it
// (it is in the socket by then: no poller wait is measured; the client's
// write is the same in every case). "stamped" is a connection from Listen
// (recvmsg(2) with SO_TIMESTAMPNS), "plain" a net.TCPConn (read(2)); the
// "/first-byte" cases read one byte and then the rest, as fasthttp's
// server does with ReduceMemoryUsage on a keep-alive connection.
// cpu-ns/op is the process's CPU time per request read, steadier than
// ns/op on a shared machine.
func BenchmarkRead(b *testing.B) {
	const reqBytes = 1024
	req := make([]byte, reqBytes)
	for _, c := range []struct {
		name      string
		stamped   bool
		firstByte bool
	}{{"plain", false, false}, {"stamped", true, false}, {"plain/first-byte", false, true}, {"stamped/first-byte", true, true}} {
		b.Run(c.name, func(b *testing.B) {
			server, client := pair(b)
			if !c.stamped {
				server, client = plainPair(b)
			}
			buf := make([]byte, 4096)
			b.ReportAllocs()
			cpu := cpuTime()
			for b.Loop() {
				if _, err := client.Write(req); err != nil {
					b.Fatal(err)
				}
				got := 0
				if c.firstByte {
					n, err := server.Read(buf[:1])
					if err != nil {
						b.Fatal(err)
					}
					got = n
				}
				for got < reqBytes {
					n, err := server.Read(buf[:reqBytes-got])
					if err != nil {
						b.Fatal(err)
					}
					got += n
				}
			}
			b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
		})
	}
}

// cpuTime is the process's user+system CPU time in nanoseconds: what the
// reads cost, without the time other processes of a shared machine take.
func cpuTime() int64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// plainPair is pair without the stamping listener.
func plainPair(b *testing.B) (server, client net.Conn) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ln.Close() })
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	server, err = ln.Accept()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { client.Close(); server.Close() })
	return server, client
}
