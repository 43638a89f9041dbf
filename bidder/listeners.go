package bidder

import (
	"fmt"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"
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
// The public listener (overload.PublicListener) also holds at most
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
// NewServer otherwise. Serve it on an overload.PublicListener. It is not the server
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

// fasthttpLogger adapts zap to fasthttp.Logger.
type fasthttpLogger struct{ l *zap.Logger }

func (f fasthttpLogger) Printf(format string, args ...any) {
	f.l.Debug(fmt.Sprintf(format, args...))
}
