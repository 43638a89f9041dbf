package bidder

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/rtbd/rtbd/overload"
)

// # Two listeners
//
// The routes (routes.go) are of two sides. The exchange side serves the
// exchanges: bids (POST /openrtb2/bid, /openrtb2/bid/{exchange}) and the
// server-to-server notices (/win, /bill, /loss). The public side serves
// browsers: the creative's trackers and clicks (/imp, /event, /click,
// /click/...), user syncs (/usersync, /match) and the demo images. A
// bidder with bidder.public_listen serves them on two listeners, so an
// operator can firewall the exchange listener to the exchanges' ranges
// without cutting browsers off; each listener has its own connection
// budget (bidder.max_conns, bidder.public_max_conns), so a flood of one
// never takes the other's. Without it, one listener serves both
// (NewServer, Handler).
//
// The public listener (PublicListener) also holds at most
// PublicOptions.MaxConnsPerAddr connections from one address (a trusted
// proxy's connections are exempt: they carry many browsers) and closes a
// new connection that sends no byte within PublicOptions.FirstByteTimeout,
// so silent connections from one client can neither take the budget nor
// hold a place for long.

// ExchangeHandler is Handler restricted to the exchange side: the public
// routes are 404 there.
func (b *Bidder) ExchangeHandler() fasthttp.RequestHandler {
	return func(rc *fasthttp.RequestCtx) { b.dispatch(rc, sideExchange) }
}

// PublicHandler is Handler restricted to the public side: bids and
// server-to-server notices are 404 there.
func (b *Bidder) PublicHandler() fasthttp.RequestHandler {
	return func(rc *fasthttp.RequestCtx) { b.dispatch(rc, sidePublic) }
}

// NewExchangeServer is NewServer serving ExchangeHandler.
func (b *Bidder) NewExchangeServer() *fasthttp.Server {
	s := b.NewServer()
	s.Handler = b.ExchangeHandler()
	return s
}

// NewPublicServer returns a server of PublicHandler holding at most
// maxConns connections (one more is answered 503 and closed), set up like
// NewServer otherwise. Serve it on a PublicListener. It is not the server
// of rtbd_bidder_conns_open (the public listener has its own metrics).
func (b *Bidder) NewPublicServer(maxConns int) *fasthttp.Server {
	s := &fasthttp.Server{
		WriteBufferSize:    16 << 10,
		Handler:            b.PublicHandler(),
		ErrorHandler:       b.ErrorHandler,
		Name:               "rtbd",
		MaxRequestBodySize: max(4*b.opts.MaxBodyBytes, 1<<20),
		ExpectHandler:      b.expect,
		Logger:             fasthttpLogger{b.opts.Logger.Named("http-public")},
		Concurrency:        max(maxConns, 1),
		ReduceMemoryUsage:  true,
	}
	return s
}

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
	addrs   *overload.AddrLimit
}

// PublicListener wraps ln for the public server (see the two listeners
// above): the per-address connection limit and the first-byte timeout,
// and what Listen does (a connection closed after a 413 is drained
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
	l := &publicListener{Listener: ln, o: o, addrs: overload.NewAddrLimit(o.MaxConnsPerAddr)}
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
	return overload.Drain(l), nil
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

// CloseWrite half-closes the connection (overload.Drain's drain after a 413).
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

// fasthttpLogger adapts zap to fasthttp.Logger.
type fasthttpLogger struct{ l *zap.Logger }

func (f fasthttpLogger) Printf(format string, args ...any) {
	f.l.Debug(fmt.Sprintf(format, args...))
}
