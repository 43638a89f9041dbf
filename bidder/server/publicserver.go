package server

import (
	"context"
	"fmt"
	"net"

	"github.com/valyala/fasthttp"

	"github.com/rtbd/rtbd/configs"
	"github.com/rtbd/rtbd/overload"
)

// publicServer is the browser-facing server of bidder.public_listen (see
// listeners.go). Its methods are nil-safe: no public_listen, nothing.
type publicServer struct {
	http *fasthttp.Server
	ln   net.Listener
}

// startPublic listens on bidder.public_listen (nil when it is empty).
func (s *Server) startPublic(cfg *configs.Config, reg Registry) (*publicServer, error) {
	b := cfg.Bidder
	if b.PublicListen == "" {
		return nil, nil
	}
	p := &publicServer{http: s.Bidder.NewPublicServer(b.PublicMaxConns)}
	p.http.ReadTimeout = b.ReadTimeout
	p.http.WriteTimeout = b.WriteTimeout
	p.http.IdleTimeout = b.IdleTimeout
	p.http.CloseOnShutdown = true
	tcp, err := net.Listen("tcp", b.PublicListen)
	if err != nil {
		return nil, fmt.Errorf("bidder: bidder.public_listen %s: %w", b.PublicListen, err)
	}
	p.ln, err = overload.PublicListener(tcp, overload.PublicOptions{MaxConnsPerAddr: b.PublicMaxConnsPerAddr,
		FirstByteTimeout: b.PublicFirstByteTimeout, TrustedProxies: rateLimitsFromConfig(b.RateLimits).TrustedProxies,
		Server: p.http, Registerer: reg})
	if err != nil {
		tcp.Close()
		return nil, fmt.Errorf("bidder: public listener metrics: %w", err)
	}
	return p, nil
}

func (p *publicServer) serve() {
	if p != nil {
		go p.http.Serve(p.ln)
	}
}

func (p *publicServer) close() {
	if p != nil {
		p.ln.Close()
	}
}

func (p *publicServer) shutdown(ctx context.Context) error {
	if p == nil {
		return nil
	}
	return p.http.ShutdownWithContext(ctx)
}

// PublicAddr is the address of the browser-facing listener
// (bidder.public_listen), "" when the bid listener serves browsers too.
func (s *Server) PublicAddr() string {
	if s.public == nil {
		return ""
	}
	return s.public.ln.Addr().String()
}
