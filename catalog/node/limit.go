package node

import (
	"net"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// limitListener holds at most max connections: one accepted while max are
// open is closed at once and counted, so the client fails fast (and tries
// another node) rather than waiting in the kernel's backlog, as a listener
// that stops accepting would make it.
type limitListener struct {
	net.Listener
	max     int64
	open    atomic.Int64
	refused prometheus.Counter
}

func newLimitListener(ln net.Listener, max int, reg prometheus.Registerer) *limitListener {
	l := &limitListener{Listener: ln, max: int64(max),
		refused: prometheus.NewCounter(prometheus.CounterOpts{Name: "rtbd_catalog_node_conns_refused_total",
			Help: "Client connections closed at accept because catalog.max_conns were open."})}
	if reg != nil {
		reg.MustRegister(l.refused, prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "rtbd_catalog_node_conns_open",
			Help: "Client connections the catalog node holds (at most catalog.max_conns)."},
			func() float64 { return float64(l.open.Load()) }))
	}
	return l
}

// Accept returns the next connection within the limit.
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.open.Add(1) <= l.max {
			return &limitConn{Conn: c, l: l}, nil
		}
		l.open.Add(-1)
		l.refused.Inc()
		c.Close()
	}
}

// limitConn gives its place back once closed.
type limitConn struct {
	net.Conn
	l    *limitListener
	once sync.Once
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.open.Add(-1) })
	return err
}
