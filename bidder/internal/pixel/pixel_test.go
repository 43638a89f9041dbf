package pixel

import (
	"bytes"
	"testing"

	"github.com/valyala/fasthttp"
)

// TestAnswers: GET and HEAD only (405 with Allow otherwise), not to be
// cached; the 1x1 GIF without a destination, else a 302 to it.
func TestAnswers(t *testing.T) {
	var rc fasthttp.RequestCtx
	rc.Request.Header.SetMethod(fasthttp.MethodPost)
	if AllowGet(&rc) || rc.Response.StatusCode() != fasthttp.StatusMethodNotAllowed || string(rc.Response.Header.Peek(fasthttp.HeaderAllow)) != "GET, HEAD" {
		t.Fatalf("POST: allowed or %d %q", rc.Response.StatusCode(), rc.Response.Header.Peek(fasthttp.HeaderAllow))
	}
	for _, m := range []string{fasthttp.MethodGet, fasthttp.MethodHead} {
		var rc fasthttp.RequestCtx
		rc.Request.Header.SetMethod(m)
		if !AllowGet(&rc) || string(rc.Response.Header.Peek(fasthttp.HeaderCacheControl)) != "no-store" {
			t.Errorf("%s: refused, or cacheable", m)
		}
	}

	var px fasthttp.RequestCtx
	OrRedirect(&px, "")
	if px.Response.StatusCode() != 200 || string(px.Response.Header.ContentType()) != "image/gif" ||
		!bytes.HasPrefix(px.Response.Body(), []byte("GIF89a")) || len(px.Response.Body()) != 43 {
		t.Errorf("pixel: %d %q %q", px.Response.StatusCode(), px.Response.Header.ContentType(), px.Response.Body())
	}
	var rd fasthttp.RequestCtx
	OrRedirect(&rd, "https://example.com/x")
	if rd.Response.StatusCode() != 302 || string(rd.Response.Header.Peek(fasthttp.HeaderLocation)) != "https://example.com/x" || len(rd.Response.Body()) != 0 {
		t.Errorf("redirect: %d %q", rd.Response.StatusCode(), rd.Response.Header.Peek(fasthttp.HeaderLocation))
	}
}
