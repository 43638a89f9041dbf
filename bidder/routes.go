package bidder

import (
	"github.com/valyala/fasthttp"

	"github.com/rtbd/rtbd/bidder/demoimg"
	"github.com/rtbd/rtbd/bidder/notice"
	"github.com/rtbd/rtbd/bidder/token"
)

// route is one path of the bid listener: an exact path, or (prefix) every
// path that starts with path. serveHTTP dispatches through routes and
// nothing else, so Routes (what bidder/README.md documents, checked by the
// documentation test) is what the listener serves.
type route struct {
	// pattern names the route in Routes and the docs: the path, with
	// {placeholders} for what a prefix route reads from the rest of it.
	pattern string
	path    string
	prefix  bool
	// public routes serve browsers (the creative's trackers and clicks,
	// user syncs, demo images): the public listener when one is
	// configured (bidder.public_listen); the others serve exchanges
	// (bids, server-to-server notices): the exchange listener.
	public bool
	serve  func(b *Bidder, rc *fasthttp.RequestCtx)
}

// routes are the bid listener's paths, exact ones first, the bid endpoint
// before all (one comparison on the hot path). Each handler checks its own
// methods (405).
var routes = [...]route{
	{pattern: PathBid, path: PathBid, serve: func(b *Bidder, rc *fasthttp.RequestCtx) {
		if !b.bidSourceRefused(rc, 0) {
			b.serveBid(rc, 0)
		}
	}},
	{pattern: PathEvent, path: PathEvent, public: true, serve: func(b *Bidder, rc *fasthttp.RequestCtx) {
		if b.allowed(rc, limitEvent) {
			b.serveEvent(rc)
		}
	}},
	{pattern: PathUserSync, path: PathUserSync, public: true, serve: func(b *Bidder, rc *fasthttp.RequestCtx) {
		if b.allowed(rc, limitUserSync) {
			b.usersync.ServeUserSync(rc)
		}
	}},
	{pattern: PathMatch, path: PathMatch, public: true, serve: func(b *Bidder, rc *fasthttp.RequestCtx) {
		if b.allowed(rc, limitMatch) {
			b.usersync.ServeMatch(rc)
		}
	}},
	{pattern: PathClick, path: PathClick, public: true, serve: (*Bidder).serveClick},
	{pattern: PathLoss, path: PathLoss, serve: func(b *Bidder, rc *fasthttp.RequestCtx) {
		if !b.noticeSourceRefused(rc, token.KindLoss) {
			b.notices.ServeLoss(rc)
		}
	}},
	{pattern: PathWin, path: PathWin, serve: func(b *Bidder, rc *fasthttp.RequestCtx) {
		if !b.noticeSourceRefused(rc, token.KindWin) {
			b.routeNotice(rc, notice.Win)
		}
	}},
	{pattern: PathBill, path: PathBill, serve: func(b *Bidder, rc *fasthttp.RequestCtx) {
		if !b.noticeSourceRefused(rc, token.KindBill) {
			b.routeNotice(rc, notice.Bill)
		}
	}},
	{pattern: PathImp, path: PathImp, public: true, serve: func(b *Bidder, rc *fasthttp.RequestCtx) { b.routeNotice(rc, notice.Imp) }},
	{pattern: PathClickBase + "{token}/{product}", path: PathClickBase, prefix: true, public: true, serve: (*Bidder).serveClick},
	{pattern: PathBid + "/{exchange}", path: PathBid + "/", prefix: true, serve: func(b *Bidder, rc *fasthttp.RequestCtx) {
		path := rc.Path()
		if i, ok := b.exchanges.Index[string(path[len(PathBid)+1:])]; ok {
			if !b.bidSourceRefused(rc, i) {
				b.serveBid(rc, i)
			}
			return
		}
		rc.SetStatusCode(fasthttp.StatusNotFound)
	}},
	{pattern: demoimg.PathPrefix + "{group}/{id}" + demoimg.Ext, path: demoimg.PathPrefix, prefix: true, public: true, serve: func(b *Bidder, rc *fasthttp.RequestCtx) {
		if !b.opts.DemoImages {
			rc.SetStatusCode(fasthttp.StatusNotFound)
			return
		}
		serveDemoImage(rc)
	}},
}

// Routes returns the pattern of every path the bid listener (Handler)
// serves, in dispatch order: exact paths ("/openrtb2/bid"), then prefixes
// with the rest of the path as {placeholders} ("/openrtb2/bid/{exchange}").
// Any other path is 404.
func Routes() []string {
	out := make([]string, len(routes))
	for i, r := range routes {
		out[i] = r.pattern
	}
	return out
}

// serveHTTP dispatches a request to its route (404 for none).
func (b *Bidder) serveHTTP(rc *fasthttp.RequestCtx) { b.dispatch(rc, sideExchange|sidePublic) }

// Listener sides, the routes a handler serves.
const (
	sideExchange = 1 << iota // routes without public
	sidePublic               // routes with public
)

func routeSide(r *route) uint8 {
	if r.public {
		return sidePublic
	}
	return sideExchange
}

// dispatch serves rc by its route among those of sides (404 for none).
func (b *Bidder) dispatch(rc *fasthttp.RequestCtx, sides uint8) {
	path := rc.Path()
	for i := range routes {
		r := &routes[i]
		if side := routeSide(r); sides&side == 0 {
			continue
		}
		if r.prefix {
			if len(path) >= len(r.path) && string(path[:len(r.path)]) == r.path {
				r.serve(b, rc)
				return
			}
		} else if string(path) == r.path {
			r.serve(b, rc)
			return
		}
	}
	rc.SetStatusCode(fasthttp.StatusNotFound)
}

// routeNotice serves /win, /bill and /imp: through Options.Notices when
// set, else the notice handler (with a spend writer), else 204 with
// outcome "unhandled".
func (b *Bidder) routeNotice(rc *fasthttp.RequestCtx, kind notice.Kind) {
	if b.opts.Notices != nil {
		b.opts.Notices(rc)
		return
	}
	if b.opts.Spend != nil {
		b.notices.Serve(rc, kind)
		return
	}
	b.m.notices.Inc()
	rc.Response.Header.Set(HeaderNoticeOutcome, "unhandled")
	rc.SetStatusCode(fasthttp.StatusNoContent)
}
