package node

import (
	"context"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/peer"

	"github.com/rtbd/rtbd/overload"
)

// limitListener holds at most max connections, and at most perAddr from
// one IP address: one accepted over either limit is closed at once and
// counted, so the client fails fast (and tries another node) rather than
// waiting in the kernel's backlog, as a listener that stops accepting
// would make it; one address cannot take every slot. It is also the
// catalog.UnreadBudget of its connections: each may hold maxUnread bytes
// of answers its client has not read.
type limitListener struct {
	net.Listener
	max, maxUnread int64
	open           atomic.Int64
	refused        prometheus.Counter
	refusedAddr    prometheus.Counter
	conns          sync.Map // netip.AddrPort (remote) -> *limitConn
	addrs          *overload.AddrLimit
}

func newLimitListener(ln net.Listener, max, perAddr, maxUnread int, reg prometheus.Registerer) *limitListener {
	l := &limitListener{Listener: ln, max: int64(max), maxUnread: int64(maxUnread),
		addrs: overload.NewAddrLimit(perAddr),
		refused: prometheus.NewCounter(prometheus.CounterOpts{Name: "rtbd_catalog_node_conns_refused_total",
			Help: "Client connections closed at accept because catalog.max_conns were open."}),
		refusedAddr: prometheus.NewCounter(prometheus.CounterOpts{Name: "rtbd_catalog_node_conns_refused_per_addr_total",
			Help: "Client connections closed at accept because catalog.max_conns_per_addr were open from their address."})}
	if reg != nil {
		reg.MustRegister(l.refused, l.refusedAddr, prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "rtbd_catalog_node_conns_open",
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
		if l.open.Add(1) > l.max {
			l.open.Add(-1)
			l.refused.Inc()
			c.Close()
			continue
		}
		lc := &limitConn{Conn: c, l: l}
		if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
			lc.key = a.AddrPort()
			if !l.addrs.Take(lc.key.Addr().Unmap()) {
				l.open.Add(-1)
				l.refusedAddr.Inc()
				c.Close()
				continue
			}
			l.conns.Store(lc.key, lc)
		}
		return lc, nil
	}
}

// Reserve implements catalog.UnreadBudget: n bytes more of unread answers
// on the connection of ctx, unless that would take it over maxUnread. An
// answer larger than the whole budget still goes out on a connection that
// holds nothing unread.
func (l *limitListener) Reserve(ctx context.Context, n int) (release func(), ok bool) {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return func() {}, true
	}
	a, ok := p.Addr.(*net.TCPAddr)
	if !ok {
		return func() {}, true
	}
	v, ok := l.conns.Load(a.AddrPort())
	if !ok {
		return func() {}, true
	}
	c, n64 := v.(*limitConn), int64(n)
	for {
		cur := c.unread.Load()
		if cur > 0 && cur+n64 > l.maxUnread {
			return nil, false
		}
		if c.unread.CompareAndSwap(cur, cur+n64) {
			return func() { c.unread.Add(-n64) }, true
		}
	}
}

// limitConn gives its place back once closed.
type limitConn struct {
	net.Conn
	l      *limitListener
	key    netip.AddrPort
	unread atomic.Int64 // bytes of answers written to gRPC, not yet to the client
	once   sync.Once
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.l.open.Add(-1)
		if c.key.IsValid() {
			c.l.conns.CompareAndDelete(c.key, c)
			c.l.addrs.Drop(c.key.Addr().Unmap())
		}
	})
	return err
}
