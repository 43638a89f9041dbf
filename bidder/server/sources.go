package server

import (
	"net"
	"net/netip"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rtbd/rtbd/overload"
)

// sourceFilterListener closes, as it accepts them, the connections whose
// peer is outside allow (bidder.Bidder.SourceFilter), counting them in
// rtbd_bidder_source_closed_total. It wraps the listener from bidder.Listen.
func sourceFilterListener(ln net.Listener, allow []netip.Prefix, reg prometheus.Registerer) (net.Listener, error) {
	l := &sourceListener{Listener: ln, allow: allow,
		closed: prometheus.NewCounter(prometheus.CounterOpts{Name: "rtbd_bidder_source_closed_total",
			Help: "Connections the exchange listener closed at accept: their source is outside every exchange's exchanges.NAME.allow_cidrs and the trusted proxies."})}
	if reg != nil {
		if err := reg.Register(l.closed); err != nil {
			return nil, err
		}
	}
	return l, nil
}

type sourceListener struct {
	net.Listener
	allow  []netip.Prefix
	closed prometheus.Counter
}

func (l *sourceListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if a, ok := c.RemoteAddr().(*net.TCPAddr); ok && !l.allowed(a.AddrPort().Addr().Unmap()) {
			l.closed.Inc()
			overload.CloseNow(c) // at once: no drain for a refused source
			continue
		}
		return c, nil
	}
}

func (l *sourceListener) allowed(a netip.Addr) bool {
	for _, p := range l.allow {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
