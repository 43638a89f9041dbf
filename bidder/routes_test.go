package bidder

import (
	"net/http"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/rtbd/rtbd/bidder/exchange"
)

// Every route of Routes reaches a handler of its own (an answer other
// than the router's 404), and nothing else does.
func TestRoutesDispatch(t *testing.T) {
	f := newFixture(t, func(o *Options) {
		o.DemoImages = true
		o.Exchanges = []exchange.Exchange{{Name: "pbs"}}
	})
	fill := strings.NewReplacer("{exchange}", "pbs", "{token}", "tok", "{product}", "1", "{group}", "1", "{id}", "2")
	routes := Routes()
	if len(routes) == 0 {
		t.Fatal("no routes")
	}
	for _, r := range routes {
		path := fill.Replace(r)
		if strings.Contains(path, "{") {
			t.Errorf("route %s: a placeholder this test does not fill", r)
			continue
		}
		if got := f.do(fasthttp.MethodGet, path, nil); got.status == http.StatusNotFound {
			t.Errorf("GET %s (route %s): 404, want its handler's answer", path, r)
		}
	}
	for _, path := range []string{"/", "/nope", "/openrtb2", "/openrtb2/bid/nope", "/openrtb2/bid/", "/eventx", "/win/1", "/demo/img"} {
		if got := f.do(fasthttp.MethodGet, path, nil); got.status != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", path, got.status)
		}
	}
	// Without demo images their route is a 404 like any unknown path.
	g := newFixture(t, nil)
	if got := g.do(fasthttp.MethodGet, "/demo/img/1/2.svg", nil); got.status != http.StatusNotFound {
		t.Errorf("GET /demo/img/1/2.svg without bidder.demo_images: %d, want 404", got.status)
	}
}
