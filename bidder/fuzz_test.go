package bidder

import (
	"bytes"
	"path/filepath"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/rtbd/rtbd/bidder/token"
	"github.com/rtbd/rtbd/catalog/catalogtest"
)

// FuzzHandler drives the whole handler in-process (a fasthttp.RequestCtx,
// as ServeConn builds it) with arbitrary methods, paths with queries,
// bodies and content encodings: the bid endpoint (decoder, privacy and ext
// scanning, native parsing, creative, encoding), /event and /click. It
// must never panic nor answer 5xx (503 is the overload answer, not
// reachable here). Seeds: the spec examples with a sample user, a corpus
// subset, gzip bodies, event and click queries.
func FuzzHandler(f *testing.F) {
	fx := newFixture(f, func(o *Options) { o.NBRBody = true })
	files, _ := filepath.Glob(filepath.Join(specDir, "request-*.json"))
	corpus, _ := filepath.Glob("../rtb/testdata/corpus/*.json")
	for _, file := range append(files, corpus...) {
		body := readFile(f, file)
		f.Add("POST", PathBid, withUser(f, body, userBulk), "")
		f.Add("POST", PathBid, body, "")
	}
	good := withUser(f, readFile(f, filepath.Join(specDir, "request-1-simple-banner.json")), userBulk)
	f.Add("POST", PathBid, gzipped(f, good), "gzip")
	f.Add("POST", PathBid, good, "br")
	f.Add("POST", PathBid, nativeBid(map[string]any{"id": "n", "native": map[string]any{"request": nativeRequest}}), "")
	f.Add("GET", "/event?uid=u&pg=1&pid=2&ev=view", []byte(nil), "")
	f.Add("GET", "/click?t=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", []byte(nil), "")
	now := time.Now()
	click, err := fx.keys.Append(nil, &token.Token{Kind: token.KindClick, Issued: now, Expires: now.Add(time.Hour),
		Campaign: "banner-medium", Group: catalogtest.BulkGroup, Products: []int64{1, 2, 10}})
	if err != nil {
		f.Fatal(err)
	}
	for _, q := range []string{".1", ".2", ".10", ".3", ".", ".-1", ".99999999999999999999", "..1"} {
		f.Add("GET", "/click?t="+string(click)+q, []byte(nil), "")
	}
	for _, q := range []string{"/1", "/2", "/10", "/", "/1/2", "/-1", "%2F1", "/../1"} {
		f.Add("GET", PathClickBase+string(click)+q, []byte(nil), "")
	}
	f.Add("GET", "/click?t=.1", []byte(nil), "")
	f.Add("GET", "/click//1", []byte(nil), "")
	f.Add("GET", "/win?t=x&p=1", []byte(nil), "")
	h := fx.b.Handler()
	f.Fuzz(func(t *testing.T, method, uri string, body []byte, encoding string) {
		var rc fasthttp.RequestCtx
		rc.Request.Header.SetMethod(method)
		rc.Request.SetRequestURI(uri)
		if encoding != "" {
			rc.Request.Header.Set("Content-Encoding", encoding)
		}
		rc.Request.SetBody(body)
		h(&rc)
		if s := rc.Response.StatusCode(); s >= 500 {
			t.Fatalf("%s %q (%d bytes, %q): status %d", method, uri, len(body), encoding, s)
		}
		if rc.Response.StatusCode() == 200 && bytes.Equal(rc.Request.URI().Path(), []byte(PathBid)) && len(rc.Response.Body()) == 0 {
			t.Fatal("200 without a body")
		}
	})
}
