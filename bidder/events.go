package bidder

import (
	"bytes"
	"errors"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/rtbd/rtbd/bidder/campaign"
	"github.com/rtbd/rtbd/bidder/creative"
	"github.com/rtbd/rtbd/bidder/demoimg"
	"github.com/rtbd/rtbd/bidder/internal/deadline"
	"github.com/rtbd/rtbd/bidder/internal/pixel"
	"github.com/rtbd/rtbd/bidder/token"
	"github.com/rtbd/rtbd/bidder/user"
	"github.com/rtbd/rtbd/bidder/usersync"
	"github.com/rtbd/rtbd/catalog/catalogpb"
)

// smallState is the pooled state of /event and /click.
type smallState struct {
	dctx deadline.Ctx
	tok  token.Token
	buf  []byte
	req  catalogpb.ProductMastersRequest
	ids  [1]int64
}

func newSmallState() any {
	return &smallState{buf: make([]byte, 0, 1024), tok: token.Token{Products: make([]int64, 0, 64)}}
}

// serveEvent is GET /event?pg=..&pid=..&ev=view[&uid=..], the product view
// pixel: it records the view in the profile of rtbd's uid within
// EventTimeout and answers a 1x1 GIF (200), 400 for a bad query, 503 if
// the store failed. The uid is the query's uid= when signed with Keys (or
// with usersync.Options.TrustQueryUID), else the uid cookie's. Without either,
// a new uid is set as the cookie and nothing is recorded: a browser that
// keeps no cookies must not create a profile per hit. When the privacy
// decision (gdpr, gdpr_consent, us_privacy of the query) says no
// personalisation, nothing is recorded and no cookie set.
func (b *Bidder) serveEvent(rc *fasthttp.RequestCtx) {
	if !pixel.AllowGet(rc) {
		return
	}
	args := rc.QueryArgs()
	q, group, pid, err := user.ParseEventQuery(args)
	if err != nil {
		b.m.events[resInvalid].Inc()
		rc.SetStatusCode(fasthttp.StatusBadRequest)
		return
	}
	if !b.usersync.QueryAllowed(args) {
		b.m.eventsNoWrite[noWritePrivacy].Inc()
		pixel.OrRedirect(rc, "")
		return
	}
	ss := b.small.Get().(*smallState)
	defer b.small.Put(ss)
	uid, src, buf := b.usersync.RequestUID(rc, q, ss.buf)
	ss.buf = buf
	if src == usersync.Minted {
		b.usersync.SetCookie(rc, uid)
		b.m.eventsNoWrite[noWriteNewUID].Inc()
		pixel.OrRedirect(rc, "")
		return
	}
	ss.dctx.Reset(time.Now().Add(b.opts.EventTimeout))
	err = b.opts.Users.RecordView(&ss.dctx, uid, group, pid)
	ss.dctx.Reset(time.Time{})
	if err != nil {
		if errors.Is(err, user.ErrInvalidUID) || errors.Is(err, user.ErrInvalidProfile) {
			b.m.events[resInvalid].Inc()
			rc.SetStatusCode(fasthttp.StatusBadRequest)
			return
		}
		b.m.events[resError].Inc()
		rc.SetStatusCode(fasthttp.StatusServiceUnavailable)
		return
	}
	b.m.events[resOK].Inc()
	b.recordView(uid, group, pid, time.Now())
	pixel.OrRedirect(rc, "")
}

// serveClick is GET /click?t=TOKEN.PRODUCT or GET /click/TOKEN/PRODUCT
// (the path form: a banner's link resolved against its <base href>): a
// click on product PRODUCT of one of our creatives. TOKEN is the bid's
// signed click token, which lists the products of the creative; the
// landing URL is looked up in the product catalog (local or remote, within
// EventTimeout) and resolved as at bid time (the product's absolute URL,
// else the campaign's click base). Never an open redirect: only a product
// rtbd signed for is followed, to a URL from rtbd's own catalog and
// campaigns.
//
// Answers: 302 to the landing URL; 302 to the campaign's click base when
// the product is no longer served (removed, out of stock: counted as
// "fallback") or the catalog failed (counted as "error"); 400 for a
// missing, unsigned, tampered or non-click token, a product the token does
// not list, or a path of another shape; 404 when there is nowhere to send
// the click; 503 when the catalog failed and there is no click base. A
// token past its expiry, but authentic, is followed all the same (a person
// never sees an error for a click) and counted "expired". Version 1 tokens
// (the landing URL signed in the token, /click?t=TOKEN) are still followed.
func (b *Bidder) serveClick(rc *fasthttp.RequestCtx) {
	if !pixel.AllowGet(rc) {
		return
	}
	ss := b.small.Get().(*smallState)
	defer b.small.Put(ss)
	t, pid, ok := clickTarget(rc)
	if !ok {
		b.m.clicks[resInvalid].Inc()
		rc.SetStatusCode(fasthttp.StatusBadRequest)
		return
	}
	var err error
	ss.buf, err = b.opts.Keys.Parse(&ss.tok, t, token.KindClick, time.Now(), ss.buf[:0])
	expired := errors.Is(err, token.ErrExpired) // authentic: followed, counted expired
	switch {
	case expired:
	case err != nil:
		b.m.clicks[resInvalid].Inc()
		rc.SetStatusCode(fasthttp.StatusBadRequest)
		return
	}
	var dest string
	switch {
	case ss.tok.URL != "": // version 1: the signed URL itself
		if pid >= 0 || !creative.IsHTTPURL(ss.tok.URL) {
			b.m.clicks[resInvalid].Inc()
			rc.SetStatusCode(fasthttp.StatusBadRequest)
			return
		}
		dest = ss.tok.URL
	case pid < 0 || !ss.tok.HasProduct(pid):
		b.m.clicks[resInvalid].Inc()
		rc.SetStatusCode(fasthttp.StatusBadRequest)
		return
	default:
		var res int
		dest, res = b.clickLanding(ss, pid)
		if dest == "" {
			b.m.clicks[res].Inc()
			if res == resError {
				rc.SetStatusCode(fasthttp.StatusServiceUnavailable)
			} else {
				rc.SetStatusCode(fasthttp.StatusNotFound)
			}
			return
		}
		if res != resOK && !expired {
			b.m.clicks[res].Inc()
			pixel.Redirect(rc, dest)
			return
		}
	}
	if expired {
		b.m.clicks[resExpired].Inc()
	} else {
		b.m.clicks[resOK].Inc()
	}
	b.recordClick(&ss.tok, pid, time.Now())
	pixel.Redirect(rc, dest)
}

// clickTarget reads the token and the product id of a click: from the path
// /click/TOKEN/PRODUCT, or from the query t=TOKEN.PRODUCT (pid -1 when t
// has no product: a version 1 token). ok is false when the product id is
// malformed or the path has another shape.
func clickTarget(rc *fasthttp.RequestCtx) (t []byte, pid int64, ok bool) {
	if path := rc.Path(); len(path) > len(PathClick) {
		rest := path[len(PathClickBase):] // the router checked the prefix
		i := bytes.IndexByte(rest, '/')
		if i <= 0 {
			return nil, 0, false
		}
		id, err := strconv.ParseInt(str(rest[i+1:]), 10, 64)
		return rest[:i], id, err == nil && id > 0
	}
	t = rc.QueryArgs().Peek("t")
	i := bytes.LastIndexByte(t, clickSep)
	if i < 0 {
		return t, -1, true
	}
	id, err := strconv.ParseInt(str(t[i+1:]), 10, 64)
	return t[:i], id, err == nil && id > 0
}

// clickLanding finds where a click on product pid of the token in ss goes
// and how it is counted: (url, resOK); when the product is no longer served,
// (click base, resFallback) or ("", resFallback) without a click base; when
// the catalog failed, (click base, resError) or ("", resError).
func (b *Bidder) clickLanding(ss *smallState, pid int64) (string, int) {
	var c *campaign.Campaign
	if set := b.opts.Campaigns.Current(); set != nil {
		c, _ = set.Get(ss.tok.Campaign)
	}
	ss.ids[0] = pid
	ss.req = catalogpb.ProductMastersRequest{ProductGroupId: ss.tok.Group, Product1QuantityAtMost: 1, Product1Ids: ss.ids[:]}
	ss.dctx.Reset(time.Now().Add(b.opts.EventTimeout))
	resp, err := b.opts.Products.GetProductMasters(&ss.dctx, &ss.req)
	ss.dctx.Reset(time.Time{})
	ss.req = catalogpb.ProductMastersRequest{}
	res := resFallback
	if err != nil {
		res = resError
		b.opts.Logger.Warn("bidder: click: catalog lookup failed", zap.Int64("group", ss.tok.Group), zap.Int64("product", pid), zap.Error(err))
	} else if ps := resp.GetProduct1S(); len(ps) == 1 && ps[0] != nil && ps[0].ProductId == pid {
		if u := landingURL(c, ps[0]); u != "" {
			return u, resOK
		}
	}
	if c != nil && creative.IsHTTPURL(c.Creative.ClickBase) {
		return c.Creative.ClickBase, res
	}
	return "", res
}

// serveDemoImage answers GET/HEAD demoimg.PathPrefix + "<group>/<id>.svg"
// (Options.DemoImages): the demo product's generated picture, 404 for any
// other path under the prefix.
func serveDemoImage(rc *fasthttp.RequestCtx) {
	if !rc.IsGet() && !rc.IsHead() {
		rc.Response.Header.Set("Allow", "GET, HEAD")
		rc.SetStatusCode(fasthttp.StatusMethodNotAllowed)
		return
	}
	group, id, ok := demoimg.Parse(rc.Path())
	if !ok {
		rc.SetStatusCode(fasthttp.StatusNotFound)
		return
	}
	rc.SetContentType(demoimg.ContentType)
	rc.Response.Header.Set("Cache-Control", "public, max-age=86400")
	rc.SetBody(demoimg.Append(rc.Response.Body()[:0], group, id))
}
