package httpc

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// startFast serves h with a real fasthttp server on 127.0.0.1.
func startFast(t *testing.T, h fasthttp.RequestHandler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &fasthttp.Server{Handler: h, MaxRequestBodySize: 64 << 20}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Shutdown() })
	return ln.Addr().String()
}

// startRaw accepts connections and lets fn write whatever it wants after
// reading the request head (a misbehaving server).
func startRaw(t *testing.T, fn func(c net.Conn, r *bufio.Reader)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for { // the request head
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if line == "\r\n" {
						break
					}
				}
				fn(c, r)
			}()
		}
	}()
	return ln.Addr().String()
}

// startSlow serves "ok", holding every /slow request until release is
// closed.
func startSlow(t *testing.T) (addr string, release chan struct{}) {
	t.Helper()
	release = make(chan struct{})
	addr = startFast(t, func(rc *fasthttp.RequestCtx) {
		if string(rc.Path()) == "/slow" {
			<-release
		}
		rc.SetBodyString("ok")
	})
	return addr, release
}

func newClient(t *testing.T, o Options) *Client {
	t.Helper()
	c, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdle)
	return c
}

func soon() time.Time { return time.Now().Add(5 * time.Second) }

func TestKeepAliveRoundTrips(t *testing.T) {
	addr := startFast(t, func(rc *fasthttp.RequestCtx) {
		switch string(rc.Path()) {
		case "/nobid":
			rc.SetStatusCode(204)
		default:
			rc.Response.Header.Set("X-Echo-Method", string(rc.Method()))
			rc.Response.Header.Set("X-Echo-Type", string(rc.Request.Header.ContentType()))
			rc.Response.Header.Set("X-Echo-Custom", string(rc.Request.Header.Peek("X-Custom")))
			fmt.Fprintf(rc, "%s %s %s", rc.Method(), rc.RequestURI(), rc.PostBody())
		}
	})
	c := newClient(t, Options{Addrs: []string{addr}})
	var resp Response
	for i := range 50 {
		req := Request{Method: "POST", URI: []byte("/bid?i=" + strconv.Itoa(i)), ContentType: "application/json",
			Header: [][2]string{{"X-Custom", "v"}}, Body: []byte(`{"id":"` + strconv.Itoa(i) + `"}`)}
		if err := c.Do(&req, soon(), &resp); err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf(`POST /bid?i=%d {"id":"%d"}`, i, i)
		if resp.Status != 200 || string(resp.Body) != want {
			t.Fatalf("got %d %q, want 200 %q", resp.Status, resp.Body, want)
		}
		if m, ct, x := resp.Header("x-echo-method"), resp.Header("X-ECHO-TYPE"), resp.Header("X-Echo-Custom"); string(m) != "POST" || string(ct) != "application/json" || string(x) != "v" {
			t.Fatalf("headers: %q %q %q", m, ct, x)
		}
		if resp.Header("X-Absent") != nil {
			t.Fatal("absent header found")
		}
	}
	if err := c.Do(&Request{URI: []byte("/nobid")}, soon(), &resp); err != nil || resp.Status != 204 || len(resp.Body) != 0 {
		t.Fatalf("204: %v %d %q", err, resp.Status, resp.Body)
	}
	// GET with no body, empty URI: "/".
	if err := c.Do(&Request{}, soon(), &resp); err != nil || string(resp.Body) != "GET / " {
		t.Fatalf("GET /: %v %q", err, resp.Body)
	}
	if d, o := c.Dials(), c.Open(); d != 1 || o != 1 {
		t.Fatalf("dials %d open %d, want one kept-alive connection", d, o)
	}
}

func TestNetHTTPFraming(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/chunked", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Trailer", "X-Sum")
		for i := range 5 {
			fmt.Fprintf(w, "part%d;", i)
			w.(http.Flusher).Flush() // forces the chunked coding
		}
		w.Header().Set("X-Sum", "5")
	})
	mux.HandleFunc("/close", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		io.WriteString(w, "bye")
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(3<<20))
		w.Write(bytes.Repeat([]byte("x"), 3<<20))
	})
	mux.HandleFunc("/len", func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		fmt.Fprint(w, n)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	addr := srv.Listener.Addr().String()
	c := newClient(t, Options{Addrs: []string{addr}})
	var resp Response

	if err := c.Do(&Request{URI: []byte("/chunked")}, soon(), &resp); err != nil || string(resp.Body) != "part0;part1;part2;part3;part4;" {
		t.Fatalf("chunked: %v %q", err, resp.Body)
	}
	if te := resp.Header("Transfer-Encoding"); string(te) != "chunked" {
		t.Fatalf("the chunked coding was not exercised: Transfer-Encoding %q", te)
	}
	if err := c.Do(&Request{URI: []byte("/big")}, soon(), &resp); err != nil || len(resp.Body) != 3<<20 {
		t.Fatalf("big: %v %d bytes", err, len(resp.Body))
	}
	// A request far larger than a socket buffer: the write cannot finish
	// in one system call.
	body := bytes.Repeat([]byte("y"), 8<<20)
	if err := c.Do(&Request{Method: "POST", URI: []byte("/len"), Body: body}, soon(), &resp); err != nil || string(resp.Body) != strconv.Itoa(len(body)) {
		t.Fatalf("8 MiB body: %v %q", err, resp.Body)
	}
	if err := c.Do(&Request{Method: "POST", URI: []byte("/len")}, soon(), &resp); err != nil || string(resp.Body) != "0" {
		t.Fatalf("empty POST: %v %q", err, resp.Body)
	}
	d := c.Dials()
	if err := c.Do(&Request{URI: []byte("/close")}, soon(), &resp); err != nil || string(resp.Body) != "bye" {
		t.Fatalf("close: %v %q", err, resp.Body)
	}
	if c.Open() != 0 {
		t.Fatalf("a Connection: close answer left %d open", c.Open())
	}
	if err := c.Do(&Request{URI: []byte("/len")}, soon(), &resp); err != nil || c.Dials() != d+1 {
		t.Fatalf("after close: %v, dials %d -> %d", err, d, c.Dials())
	}
}

func TestTLS(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "secure") }))
	t.Cleanup(srv.Close)
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	addr := srv.Listener.Addr().String()
	c := newClient(t, Options{Addrs: []string{addr}, Host: "example.com:443", TLS: &tls.Config{RootCAs: pool}})
	var resp Response
	for range 3 {
		if err := c.Do(&Request{URI: []byte("/")}, soon(), &resp); err != nil || string(resp.Body) != "secure" {
			t.Fatalf("tls: %v %q", err, resp.Body)
		}
	}
	if c.Dials() != 1 {
		t.Fatalf("dials %d", c.Dials())
	}
}

func TestBadResponses(t *testing.T) {
	cases := []struct {
		name, answer string
		want         error
		body         string
	}{
		{"http/1.0 to the end", "HTTP/1.0 200 OK\r\n\r\nuntil close", nil, "until close"},
		{"100 continue first", "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok", nil, "ok"},
		{"no reason phrase", "HTTP/1.1 200\r\nContent-Length: 1\r\nConnection: close\r\n\r\nx", nil, "x"},
		{"chunk extension and trailer", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n3;a=b\r\nabc\r\n0\r\nX-T: 1\r\n\r\n", nil, "abc"},
		{"garbage", "hello world\r\n\r\n", ErrBadResponse, ""},
		{"http/2 preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", ErrBadResponse, ""},
		{"bad status", "HTTP/1.1 2x0 OK\r\n\r\n", ErrBadResponse, ""},
		{"status below 100", "HTTP/1.1 099 Odd\r\n\r\n", ErrBadResponse, ""},
		{"101 unasked", "HTTP/1.1 101 Switching Protocols\r\n\r\n", ErrBadResponse, ""},
		{"bad content-length", "HTTP/1.1 200 OK\r\nContent-Length: 1x\r\n\r\n", ErrBadResponse, ""},
		{"negative content-length", "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", ErrBadResponse, ""},
		{"conflicting content-length", "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab", ErrBadResponse, ""},
		{"folded header", "HTTP/1.1 200 OK\r\nX-A: 1\r\n continued\r\n\r\n", ErrBadResponse, ""},
		{"header without colon", "HTTP/1.1 200 OK\r\nNoColon\r\n\r\n", ErrBadResponse, ""},
		{"bad chunk size", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", ErrBadResponse, ""},
		{"chunk without CRLF", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nab\r\n0\r\n\r\n", ErrBadResponse, ""},
		{"huge chunk", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffffffff\r\n", ErrTooLarge, ""},
		{"body over the limit", "HTTP/1.1 200 OK\r\nContent-Length: 999999999\r\n\r\n", ErrTooLarge, ""},
		{"header over the limit", "HTTP/1.1 200 OK\r\nX-Big: " + strings.Repeat("a", 70<<10) + "\r\n\r\n", ErrTooLarge, ""},
		{"cut in the header", "HTTP/1.1 200 OK\r\nContent-Le", io.ErrUnexpectedEOF, ""},
		{"cut in the body", "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", io.ErrUnexpectedEOF, ""},
		{"cut in a chunk", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\na\r\nabc", io.ErrUnexpectedEOF, ""},
		{"closed at once", "", io.EOF, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			addr := startRaw(t, func(c net.Conn, _ *bufio.Reader) { io.WriteString(c, tc.answer) })
			c := newClient(t, Options{Addrs: []string{addr}, MaxBodyBytes: 1 << 20})
			var resp Response
			err := c.Do(&Request{URI: []byte("/")}, soon(), &resp)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if err == nil && string(resp.Body) != tc.body {
				t.Fatalf("body %q, want %q", resp.Body, tc.body)
			}
			if c.Open() != 0 {
				t.Fatalf("%d connections left open", c.Open())
			}
		})
	}
}

func TestDeadline(t *testing.T) {
	addr := startRaw(t, func(c net.Conn, r *bufio.Reader) { io.Copy(io.Discard, r) }) // never answers
	c := newClient(t, Options{Addrs: []string{addr}})
	var resp Response
	start := time.Now()
	err := c.Do(&Request{URI: []byte("/")}, time.Now().Add(100*time.Millisecond), &resp)
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("err = %v, want a timeout", err)
	}
	if el := time.Since(start); el > 4*time.Second { // a bound on a hang, not a timing assert
		t.Fatalf("returned after %v", el)
	}
	if c.Open() != 0 {
		t.Fatalf("a timed-out connection stays open")
	}
}

func TestMaxConnsWaitsThenGivesUp(t *testing.T) {
	addr, release := startSlow(t)
	c := newClient(t, Options{Addrs: []string{addr}, MaxConns: 1})
	done := make(chan error, 1)
	go func() {
		var resp Response
		done <- c.Do(&Request{URI: []byte("/slow")}, soon(), &resp)
	}()
	for c.Open() == 0 {
		time.Sleep(time.Millisecond)
	}
	var resp Response
	if err := c.Do(&Request{URI: []byte("/")}, time.Now().Add(50*time.Millisecond), &resp); !errors.Is(err, ErrNoFreeConns) {
		t.Fatalf("err = %v, want ErrNoFreeConns", err)
	}
	// A waiter gets the connection when the slow request ends.
	waited := make(chan error, 1)
	go func() {
		var resp Response
		waited <- c.Do(&Request{URI: []byte("/")}, soon(), &resp)
	}()
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := <-waited; err != nil {
		t.Fatal(err)
	}
	if c.Dials() != 1 {
		t.Fatalf("dials %d, want the one connection shared", c.Dials())
	}
}

func TestIdleConnectionsExpire(t *testing.T) {
	addr := startFast(t, func(rc *fasthttp.RequestCtx) { rc.SetBodyString("ok") })
	c := newClient(t, Options{Addrs: []string{addr}, MaxIdle: 20 * time.Millisecond})
	var resp Response
	for range 2 {
		if err := c.Do(&Request{}, soon(), &resp); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The expired connection is closed by the request that finds it or by
	// the sweep, whichever comes first; never reused.
	if c.Dials() != 2 || c.Open() > 1 {
		t.Fatalf("dials %d open %d: an idle-expired connection was reused or leaked", c.Dials(), c.Open())
	}
}

func TestRoundRobinDials(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]int{}
	h := func(name string) fasthttp.RequestHandler {
		return func(rc *fasthttp.RequestCtx) {
			mu.Lock()
			seen[name]++
			mu.Unlock()
			rc.SetBodyString(name)
		}
	}
	a, b := startFast(t, h("a")), startFast(t, h("b"))
	c := newClient(t, Options{Addrs: []string{a, b}, MaxIdle: time.Nanosecond}) // a new connection per request
	var resp Response
	for range 4 {
		if err := c.Do(&Request{}, soon(), &resp); err != nil {
			t.Fatal(err)
		}
	}
	if seen["a"] != 2 || seen["b"] != 2 {
		t.Fatalf("requests per server %v, want 2 and 2", seen)
	}
}

func TestConcurrentCallers(t *testing.T) {
	addr := startFast(t, func(rc *fasthttp.RequestCtx) { rc.Write(rc.PostBody()) })
	c := newClient(t, Options{Addrs: []string{addr}, MaxConns: 16})
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var resp Response
			for i := range 100 {
				body := fmt.Appendf(nil, "caller %d request %d %s", g, i, strings.Repeat("z", i*37))
				if err := c.Do(&Request{Method: "POST", Body: body}, soon(), &resp); err != nil {
					errs <- err
					return
				}
				if !bytes.Equal(resp.Body, body) {
					errs <- fmt.Errorf("caller %d got %.40q, want %.40q", g, resp.Body, body)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if o := c.Open(); o > 16 {
		t.Fatalf("%d connections open, MaxConns 16", o)
	}
}

func TestOptionsValidated(t *testing.T) {
	for _, o := range []Options{{}, {Addrs: []string{"nohostport"}}, {Addrs: []string{"a:1"}, MaxConns: -1}, {Addrs: []string{"a:1"}, MaxBodyBytes: -5}} {
		if _, err := New(o); !errors.Is(err, ErrInvalid) {
			t.Errorf("New(%+v) = %v, want ErrInvalid", o, err)
		}
	}
	if _, err := New(Options{Addrs: []string{"a:1"}, MaxConns: -1}); err == nil || !strings.Contains(err.Error(), "max_conns") {
		t.Errorf("the bad key is not named: %v", err)
	}
}

func TestRefusedIsAnOpError(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	c := newClient(t, Options{Addrs: []string{addr}})
	var resp Response
	var oe *net.OpError
	if err := c.Do(&Request{}, soon(), &resp); !errors.As(err, &oe) {
		t.Fatalf("err = %v, want a *net.OpError", err)
	}
	if c.Open() != 0 {
		t.Fatal("a failed dial counts as open")
	}
}

// connErr reports whether err is one a load generator counts as a
// connection failure.
func connErr(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

func TestResets(t *testing.T) {
	// Reset right after the request: the read fails.
	addr := startRaw(t, func(c net.Conn, _ *bufio.Reader) {
		c.(*net.TCPConn).SetLinger(0)
	})
	c := newClient(t, Options{Addrs: []string{addr}})
	var resp Response
	if err := c.Do(&Request{}, soon(), &resp); !connErr(err) {
		t.Fatalf("reset before the answer: err = %v", err)
	}
	// One answer, then the server resets the idle keep-alive connection:
	// the next request on it fails (no retries: a benchmark must see it),
	// and the one after dials again.
	answered := make(chan struct{}, 4)
	addr = startRaw(t, func(c net.Conn, _ *bufio.Reader) {
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		answered <- struct{}{}
		time.Sleep(50 * time.Millisecond)
		c.(*net.TCPConn).SetLinger(0)
	})
	c = newClient(t, Options{Addrs: []string{addr}})
	if err := c.Do(&Request{}, soon(), &resp); err != nil {
		t.Fatal(err)
	}
	<-answered
	time.Sleep(200 * time.Millisecond) // the reset has happened
	if err := c.Do(&Request{}, soon(), &resp); !connErr(err) {
		t.Fatalf("request on a reset connection: err = %v", err)
	}
	if err := c.Do(&Request{}, soon(), &resp); err != nil || c.Dials() != 2 {
		t.Fatalf("after the reset: %v, %d dials", err, c.Dials())
	}
}

// Two connections freed at once must reach two waiters, not one (a wake-up
// token that is dropped must not strand the second waiter until its
// deadline).
func TestEveryWaiterGetsAFreedConn(t *testing.T) {
	for round := range 20 {
		addr, release := startSlow(t)
		c := newClient(t, Options{Addrs: []string{addr}, MaxConns: 2})
		errs := make(chan error, 4)
		for range 2 {
			go func() {
				var resp Response
				errs <- c.Do(&Request{URI: []byte("/slow")}, soon(), &resp)
			}()
		}
		for c.Open() < 2 {
			time.Sleep(time.Millisecond)
		}
		for range 2 {
			go func() {
				var resp Response
				errs <- c.Do(&Request{URI: []byte("/")}, time.Now().Add(3*time.Second), &resp)
			}()
		}
		time.Sleep(20 * time.Millisecond) // both wait
		close(release)
		for range 4 {
			if err := <-errs; err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
	}
}

// A client left alone closes its idle connections (a finished run must not
// hold the server's sockets), and works again afterwards.
func TestIdleConnectionsAreSwept(t *testing.T) {
	addr := startFast(t, func(rc *fasthttp.RequestCtx) { rc.SetBodyString("ok") })
	c := newClient(t, Options{Addrs: []string{addr}, MaxIdle: 30 * time.Millisecond})
	var resp Response
	for round := range 2 {
		if err := c.Do(&Request{}, soon(), &resp); err != nil {
			t.Fatal(err)
		}
		give := time.Now().Add(10 * time.Second) // a bound on a hang, not a timing assert
		for c.Open() > 0 {
			if time.Now().After(give) {
				t.Fatalf("round %d: %d connections still open", round, c.Open())
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	if c.Dials() != 2 {
		t.Fatalf("dials %d", c.Dials())
	}
}
