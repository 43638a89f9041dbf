package bidder

import (
	"errors"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/rtbd/rtbd/bidder/creative"
	"github.com/rtbd/rtbd/bidder/token"
	"github.com/rtbd/rtbd/bidder/user"
)

// pixelGIF is a transparent 1x1 GIF (43 bytes).
var pixelGIF = []byte{
	'G', 'I', 'F', '8', '9', 'a', 1, 0, 1, 0, 0x80, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff,
	0x21, 0xf9, 4, 1, 0, 0, 0, 0, 0x2c, 0, 0, 0, 0, 1, 0, 1, 0, 0, 2, 2, 0x44, 1, 0, 0x3b,
}

// smallState is the pooled state of /event and /click.
type smallState struct {
	dctx deadlineCtx
	tok  token.Token
	buf  []byte
}

func newSmallState() any { return &smallState{buf: make([]byte, 0, 1024)} }

// serveEvent is GET /event?uid=..&pg=..&pid=..&ev=view, the product view
// pixel: it records the view in the user store within EventTimeout and
// answers a 1x1 GIF (200), 400 for a bad query, 503 if the store failed.
func (b *Bidder) serveEvent(rc *fasthttp.RequestCtx) {
	if !rc.IsGet() && !rc.IsHead() {
		rc.Response.Header.Set(fasthttp.HeaderAllow, "GET, HEAD")
		rc.SetStatusCode(fasthttp.StatusMethodNotAllowed)
		return
	}
	rc.Response.Header.Set(fasthttp.HeaderCacheControl, "no-store")
	uid, group, pid, _, err := user.ParseEvent(rc.QueryArgs())
	if err != nil {
		b.m.events[resInvalid].Inc()
		rc.SetStatusCode(fasthttp.StatusBadRequest)
		return
	}
	ss := b.small.Get().(*smallState)
	ss.dctx.reset(time.Now().Add(b.opts.EventTimeout))
	err = b.opts.Users.RecordView(&ss.dctx, uid, group, pid)
	ss.dctx.reset(time.Time{})
	b.small.Put(ss)
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
	rc.SetContentType("image/gif")
	rc.SetStatusCode(fasthttp.StatusOK)
	rc.Response.SetBody(pixelGIF)
}

// serveClick is GET /click?t=TOKEN: a signed click token from one of our
// creatives redirects (302) to the landing URL it carries. An unsigned,
// tampered or non-click token is 400, an expired one 410: never an open
// redirect, since only URLs rtbd signed are followed.
func (b *Bidder) serveClick(rc *fasthttp.RequestCtx) {
	if !rc.IsGet() && !rc.IsHead() {
		rc.Response.Header.Set(fasthttp.HeaderAllow, "GET, HEAD")
		rc.SetStatusCode(fasthttp.StatusMethodNotAllowed)
		return
	}
	rc.Response.Header.Set(fasthttp.HeaderCacheControl, "no-store")
	ss := b.small.Get().(*smallState)
	defer b.small.Put(ss)
	var err error
	ss.buf, err = b.opts.Keys.Parse(&ss.tok, rc.QueryArgs().Peek("t"), token.KindClick, time.Now(), ss.buf[:0])
	switch {
	case errors.Is(err, token.ErrExpired):
		b.m.clicks[resExpired].Inc()
		rc.SetStatusCode(fasthttp.StatusGone)
		return
	case err != nil || !creative.IsHTTPURL(ss.tok.URL):
		b.m.clicks[resInvalid].Inc()
		rc.SetStatusCode(fasthttp.StatusBadRequest)
		return
	}
	b.m.clicks[resOK].Inc()
	// Location is copied into the response header before ss is reused.
	rc.Response.Header.Set(fasthttp.HeaderLocation, ss.tok.URL)
	rc.Response.Header.Set("Referrer-Policy", "no-referrer-when-downgrade")
	rc.SetStatusCode(fasthttp.StatusFound)
	ss.tok = token.Token{}
}
