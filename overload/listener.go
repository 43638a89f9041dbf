package overload

import (
	"errors"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"
)

// Defaults of PublicOptions.
const (
	DefaultPublicMaxConnsPerAddr  = 64
	DefaultPublicFirstByteTimeout = 2 * time.Second
)

// PublicOptions configure PublicListener. The zero value is usable.
type PublicOptions struct {
	// MaxConnsPerAddr is the most connections held from one IP address;
	// one more is closed at accept. Default DefaultPublicMaxConnsPerAddr.
	MaxConnsPerAddr int
	// FirstByteTimeout is how long a new connection may stay silent before
	// it is closed; after its first byte the server's own timeouts apply.
	// Default DefaultPublicFirstByteTimeout.
	FirstByteTimeout time.Duration
	// TrustedProxies are exempt from MaxConnsPerAddr (a load balancer's
	// connections carry many browsers): bidder.rate_limits.trusted_proxies.
	TrustedProxies []netip.Prefix
	// Server is the server that serves the listener, for the count of the
	// connections it refused (rtbd_bidder_public_conns_refused_total
	// reason max_conns); nil: not counted.
	Server *fasthttp.Server
	// Registerer receives the listener's metrics; nil: none.
	Registerer prometheus.Registerer
}

// publicListener is PublicListener's listener.
type publicListener struct {
	net.Listener
	o       PublicOptions
	open    atomic.Int64
	perAddr atomic.Int64 // refused at accept
	silent  atomic.Int64 // closed by the first-byte timeout
	addrs   *AddrLimit
}

// PublicListener wraps ln for the bidder's public server (bidder.public_listen: browsers): the per-address connection limit and the first-byte timeout,
// and what Drain does (a connection closed after a 413 is drained
// first). Its metrics: rtbd_bidder_public_conns_open,
// rtbd_bidder_public_conns_refused_total{reason} and
// rtbd_bidder_public_first_byte_timeouts_total.
func PublicListener(ln net.Listener, o PublicOptions) (net.Listener, error) {
	if o.MaxConnsPerAddr <= 0 {
		o.MaxConnsPerAddr = DefaultPublicMaxConnsPerAddr
	}
	if o.FirstByteTimeout <= 0 {
		o.FirstByteTimeout = DefaultPublicFirstByteTimeout
	}
	l := &publicListener{Listener: ln, o: o, addrs: NewAddrLimit(o.MaxConnsPerAddr)}
	if reg := o.Registerer; reg != nil {
		const refusedHelp = "Connections the public listener (bidder.public_listen) closed at accept: reason per_addr (bidder.public_max_conns_per_addr held from the address), max_conns (bidder.public_max_conns held: answered 503)."
		server := o.Server
		for _, c := range []prometheus.Collector{
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "rtbd_bidder_public_conns_open",
				Help: "Connections the public listener (bidder.public_listen) holds open."},
				func() float64 { return float64(l.open.Load()) }),
			prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "rtbd_bidder_public_conns_refused_total", Help: refusedHelp,
				ConstLabels: prometheus.Labels{"reason": "per_addr"}},
				func() float64 { return float64(l.perAddr.Load()) }),
			prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "rtbd_bidder_public_conns_refused_total", Help: refusedHelp,
				ConstLabels: prometheus.Labels{"reason": "max_conns"}},
				func() float64 {
					if server == nil {
						return 0
					}
					return float64(server.GetRejectedConnectionsCount())
				}),
			prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "rtbd_bidder_public_first_byte_timeouts_total",
				Help: "Connections of the public listener closed because they sent no byte within bidder.public_first_byte_timeout."},
				func() float64 { return float64(l.silent.Load()) }),
		} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return Drain(l), nil
}

// Accept returns the next connection within the per-address limit, its
// reads bounded by the first-byte timeout until its first byte.
func (l *publicListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		var addr netip.Addr
		if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
			addr = a.AddrPort().Addr().Unmap()
		}
		if addr.IsValid() && !l.trusted(addr) {
			if !l.addrs.Take(addr) {
				l.perAddr.Add(1)
				c.Close()
				continue
			}
		} else {
			addr = netip.Addr{} // not counted per address
		}
		l.open.Add(1)
		fc := &firstByteConn{Conn: c, l: l, addr: addr, by: time.Now().Add(l.o.FirstByteTimeout)}
		_ = c.SetReadDeadline(fc.by)
		return fc, nil
	}
}

func (l *publicListener) trusted(a netip.Addr) bool {
	for _, p := range l.o.TrustedProxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// firstByteConn bounds its reads by the first-byte deadline (by) until
// a read returns a byte: a read deadline the server sets before then is
// capped at by; the first byte restores the server's own.
type firstByteConn struct {
	net.Conn
	l    *publicListener
	addr netip.Addr // counted per address; invalid: not
	by   time.Time
	got  atomic.Bool
	mu   sync.Mutex
	want time.Time // the read deadline the server asked for
	once sync.Once
}

func (c *firstByteConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 && !c.got.Load() {
		c.mu.Lock()
		c.got.Store(true)
		want := c.want
		c.mu.Unlock()
		_ = c.Conn.SetReadDeadline(want)
	} else if n == 0 && !c.got.Load() {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			c.l.silent.Add(1)
		}
	}
	return n, err
}

func (c *firstByteConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	c.want = t
	if !c.got.Load() && (t.IsZero() || t.After(c.by)) {
		t = c.by
	}
	c.mu.Unlock()
	return c.Conn.SetReadDeadline(t)
}

func (c *firstByteConn) SetDeadline(t time.Time) error {
	if err := c.Conn.SetWriteDeadline(t); err != nil {
		return err
	}
	return c.SetReadDeadline(t)
}

// CloseWrite half-closes the connection (Drain's drain after a 413).
func (c *firstByteConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

func (c *firstByteConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.l.open.Add(-1)
		if c.addr.IsValid() {
			c.l.addrs.Drop(c.addr)
		}
	})
	return err
}
