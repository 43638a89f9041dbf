// Package pixel holds the answers the browser-facing endpoints share
// (/event, /click, /usersync, /match): GET and HEAD only, the transparent
// 1x1 GIF, and the 302 redirect.
package pixel

import "github.com/valyala/fasthttp"

// GIF is the transparent 1x1 GIF OrRedirect answers (43 bytes; not to be
// modified).
var GIF = []byte{
	'G', 'I', 'F', '8', '9', 'a', 1, 0, 1, 0, 0x80, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff,
	0x21, 0xf9, 4, 1, 0, 0, 0, 0, 0x2c, 0, 0, 0, 0, 1, 0, 1, 0, 0, 2, 2, 0x44, 1, 0, 0x3b,
}

// AllowGet answers 405 (with Allow) to anything but GET and HEAD and
// reports whether the request may go on; its answer is not to be cached.
func AllowGet(rc *fasthttp.RequestCtx) bool {
	if !rc.IsGet() && !rc.IsHead() {
		rc.Response.Header.Set(fasthttp.HeaderAllow, "GET, HEAD")
		rc.SetStatusCode(fasthttp.StatusMethodNotAllowed)
		return false
	}
	rc.Response.Header.Set(fasthttp.HeaderCacheControl, "no-store")
	return true
}

// Redirect answers 302 to dest (copied into the response header).
func Redirect(rc *fasthttp.RequestCtx, dest string) {
	rc.Response.Header.Set(fasthttp.HeaderLocation, dest)
	rc.Response.Header.Set("Referrer-Policy", "no-referrer-when-downgrade")
	rc.SetStatusCode(fasthttp.StatusFound)
}

// OrRedirect answers 302 to dest, or the 1x1 GIF (200) when dest is "".
func OrRedirect(rc *fasthttp.RequestCtx, dest string) {
	if dest != "" {
		Redirect(rc, dest)
		return
	}
	rc.SetContentType("image/gif")
	rc.SetStatusCode(fasthttp.StatusOK)
	rc.Response.SetBody(GIF)
}
