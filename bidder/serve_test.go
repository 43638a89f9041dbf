package bidder

import (
	"context"
	"net"
	"net/netip"
	"path/filepath"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// TestGracefulDrain: a request in flight when the server shuts down is
// answered; new connections are refused.
func TestGracefulDrain(t *testing.T) {
	bp := &blockingProducts{entered: make(chan struct{}, 1), release: make(chan struct{})}
	f := newFixture(t, func(o *Options) {
		bp.ProductStore = o.Products
		o.Products = bp
	})
	srv := f.b.NewServer()
	srv.CloseOnShutdown = true
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	body := withUser(t, readFile(t, filepath.Join(specDir, "request-1-simple-banner.json")), userBulk, "tmax", 5000)
	result := make(chan int, 1)
	go func() {
		c := &fasthttp.Client{ReadTimeout: 10 * time.Second}
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		req.SetRequestURI("http://" + ln.Addr().String() + PathBid)
		req.Header.SetMethod("POST")
		req.SetBody(body)
		if err := c.Do(req, resp); err != nil {
			result <- -1
			return
		}
		result <- resp.StatusCode()
	}()
	select {
	case <-bp.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("request never reached the catalog")
	}
	done := make(chan error, 1)
	go func() { done <- srv.ShutdownWithContext(context.Background()) }()
	time.Sleep(50 * time.Millisecond) // let Shutdown close the listener
	close(bp.release)
	select {
	case st := <-result:
		if st != 200 {
			t.Errorf("in-flight request got %d during shutdown, want 200", st)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("in-flight request never answered")
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("shutdown: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("shutdown did not finish")
	}
	if _, err := net.DialTimeout("tcp", ln.Addr().String(), time.Second); err == nil {
		t.Error("accepting after shutdown")
	}
}

// BenchmarkBidSourceRefused is the CPU of a bid request refused for its
// source (exchanges.NAME.allow_cidrs), from dispatch to the 403, beside
// the same request's full bid (the baseline): a ratio of one run.
func BenchmarkBidSourceRefused(b *testing.B) {
	f := newFixture(b, func(o *Options) {
		o.Exchanges = []Exchange{{Name: "x1", AllowCIDRs: []netip.Prefix{netip.MustParsePrefix("203.0.113.0/24")}}, {Name: "open"}}
	})
	body := withUser(b, readFile(b, filepath.Join(specDir, "request-1-simple-banner.json")), userBulk)
	for _, c := range []struct{ name, path string }{{"refused", PathBid + "/x1"}, {"bid", PathBid + "/open"}} {
		b.Run(c.name, func(b *testing.B) {
			var req fasthttp.Request
			req.Header.SetMethod("POST")
			req.Header.SetContentType("application/json")
			req.SetRequestURI(c.path)
			req.SetBody(body)
			var rc fasthttp.RequestCtx
			rc.Init(&req, &net.TCPAddr{IP: net.IPv4(198, 51, 100, 7), Port: 1234}, nil)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				rc.Response.Reset()
				f.b.serveHTTP(&rc)
			}
			if want := map[string]int{"refused": 403, "bid": 200}[c.name]; rc.Response.StatusCode() != want {
				b.Fatalf("%s: %d, want %d", c.name, rc.Response.StatusCode(), want)
			}
		})
	}
}
