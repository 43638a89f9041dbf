package overload

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"
)

// DefaultMaxConns is the default bound of the connections a server holds
// (bidder.max_conns).
const DefaultMaxConns = 10_000

// LimitConns bounds the connections s holds to max and makes the idle ones
// cheap.
//
// fasthttp serves each connection, for its whole life, on one worker of a
// pool of Server.Concurrency workers; a connection accepted while every
// worker is busy is answered 503 ("Connection: close") in the accept loop,
// closed and counted (GetRejectedConnectionsCount). An idle keep-alive
// connection keeps its worker, so that is exactly a bound on the
// connections held, idle ones included, with the overflow answered and
// counted, without a listener of our own.
//
// ReduceMemoryUsage hands a connection's read and write buffers and its
// request and response bodies back to fasthttp's pools while it waits for
// its next request, so an idle connection holds its goroutine and a small
// reader instead of about 20 KiB of buffers (bench/results/ has the
// measured cost); an active one takes them from the pools (no allocation
// once they are warm).
func LimitConns(s *fasthttp.Server, max int) {
	s.Concurrency = max
	s.ReduceMemoryUsage = true
}

// RegisterConnMetrics registers rtbd_bidder_conns_open and
// rtbd_bidder_conns_rejected_total, read when scraped from the server srv
// holds (0 while it holds none).
func RegisterConnMetrics(reg prometheus.Registerer, srv *atomic.Pointer[fasthttp.Server]) error {
	if reg == nil {
		return nil
	}
	open := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "rtbd_bidder_conns_open",
		Help: "Connections the bid server holds open (idle keep-alive ones included), at most bidder.max_conns."},
		func() float64 {
			if s := srv.Load(); s != nil {
				return float64(max(s.GetOpenConnectionsCount(), 0))
			}
			return 0
		})
	rejected := prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "rtbd_bidder_conns_rejected_total",
		Help: "Connections answered 503 and closed because bidder.max_conns were held."},
		func() float64 {
			if s := srv.Load(); s != nil {
				return float64(s.GetRejectedConnectionsCount())
			}
			return 0
		})
	for _, c := range []prometheus.Collector{open, rejected} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}
