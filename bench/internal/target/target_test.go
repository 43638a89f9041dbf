package target

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/rtbd/rtbd/bench"
	"github.com/rtbd/rtbd/bench/internal/httpc"
	"github.com/rtbd/rtbd/bench/internal/loopback"
)

func startHTTP(t *testing.T, h fasthttp.RequestHandler) string {
	t.Helper()
	return loopback.Serve(t, &fasthttp.Server{Handler: h})
}

// closedPort returns an address nobody listens on.
func closedPort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func TestHTTPTargetClassifies(t *testing.T) {
	var gotBody, gotHeader, gotMethod atomic.Value
	addr := startHTTP(t, func(ctx *fasthttp.RequestCtx) {
		gotBody.Store(string(ctx.PostBody()))
		gotHeader.Store(string(ctx.Request.Header.Peek("X-Openrtb-Version")))
		gotMethod.Store(string(ctx.Method()))
		switch string(ctx.Path()) {
		case "/ok":
			ctx.SetBodyString("bid")
		case "/nobid":
			ctx.SetStatusCode(fasthttp.StatusNoContent)
		case "/bad":
			ctx.SetStatusCode(fasthttp.StatusBadRequest)
		case "/err":
			ctx.SetStatusCode(fasthttp.StatusServiceUnavailable)
		case "/redirect":
			ctx.Redirect("/ok", fasthttp.StatusFound)
		case "/slow":
			time.Sleep(300 * time.Millisecond)
		case "/garbage":
			ctx.SetBodyString("not a bid")
		}
	})
	body := func(w *bench.Worker, dst []byte) []byte {
		return fmt.Appendf(dst, `{"id":"%d-%d"}`, w.ID, w.Seq)
	}
	check := func(status int, b []byte) bench.Outcome {
		if status == 200 && string(b) != "bid" {
			return bench.ErrOther
		}
		return ClassifyHTTPStatus(status, b)
	}
	cases := []struct {
		path     string
		deadline time.Duration
		want     bench.Outcome
	}{
		{"/ok", time.Second, bench.OK},
		{"/nobid", time.Second, bench.NoBid},
		{"/bad", time.Second, bench.ErrStatus4xx},
		{"/err", time.Second, bench.ErrStatus5xx},
		{"/redirect", time.Second, bench.ErrOther},
		{"/garbage", time.Second, bench.ErrOther},
		{"/slow", 50 * time.Millisecond, bench.ErrTimeout},
	}
	for _, c := range cases {
		ht, err := NewHTTP(HTTPOptions{URL: "http://" + addr + c.path, Body: body, Check: check,
			Header: map[string]string{"X-Openrtb-Version": "2.6"}})
		if err != nil {
			t.Fatal(err)
		}
		w := bench.NewWorker(3, 1)
		w.Seq = 7
		w.Deadline = time.Now().Add(c.deadline)
		if got := ht.Do(context.Background(), w); got != c.want {
			t.Errorf("%s: %v, want %v", c.path, got, c.want)
		}
		if ht.Name() != c.path {
			t.Errorf("name %q", ht.Name())
		}
		if c.path == "/ok" {
			if gotBody.Load() != `{"id":"3-7"}` || gotHeader.Load() != "2.6" || gotMethod.Load() != "POST" {
				t.Errorf("server saw body %v header %v method %v", gotBody.Load(), gotHeader.Load(), gotMethod.Load())
			}
			if string(w.Buf) != `{"id":"3-7"}` {
				t.Errorf("body not built in the worker's buffer: %q", w.Buf)
			}
		}
	}
	// No deadline on the worker: the target's own Timeout applies.
	ht, _ := NewHTTP(HTTPOptions{URL: "http://" + addr + "/slow", Timeout: 50 * time.Millisecond})
	if got := ht.Do(context.Background(), bench.NewWorker(0, 0)); got != bench.ErrTimeout {
		t.Errorf("slow without worker deadline: %v", got)
	}
	// Nobody listening: a connection error.
	ht, _ = NewHTTP(HTTPOptions{Name: "refused", URL: "http://" + closedPort(t) + "/ok"})
	w := bench.NewWorker(0, 0)
	w.Deadline = time.Now().Add(time.Second)
	if got := ht.Do(context.Background(), w); got != bench.ErrConn {
		t.Errorf("refused: %v, want conn", got)
	}
	// Several addresses: the HostClient dials them round-robin, so
	// concurrent requests (several connections) reach both servers.
	var hitsA, hitsB atomic.Int64
	a := startHTTP(t, func(ctx *fasthttp.RequestCtx) { hitsA.Add(1); time.Sleep(20 * time.Millisecond) })
	b := startHTTP(t, func(ctx *fasthttp.RequestCtx) { hitsB.Add(1); time.Sleep(20 * time.Millisecond) })
	ht, err := NewHTTP(HTTPOptions{URL: "http://bidders/bid", Addrs: []string{a, b}})
	if err != nil {
		t.Fatal(err)
	}
	outs := make(chan bench.Outcome, 8)
	for i := 0; i < 8; i++ {
		go func(i int) {
			w := bench.NewWorker(i, 0)
			w.Deadline = time.Now().Add(5 * time.Second)
			outs <- ht.Do(context.Background(), w)
		}(i)
	}
	for i := 0; i < 8; i++ {
		if got := <-outs; got != bench.OK {
			t.Fatalf("addrs: %v", got)
		}
	}
	if hitsA.Load() == 0 || hitsB.Load() == 0 {
		t.Errorf("addrs: hits %d/%d, want both servers used", hitsA.Load(), hitsB.Load())
	}
}

func TestNewHTTPValidates(t *testing.T) {
	for _, o := range []HTTPOptions{
		{URL: ""},
		{URL: "ftp://x/y"},
		{URL: "http:///nohost"},
		{URL: "http://h/x", MaxConns: -1},
		{URL: "http://h/x", Timeout: -time.Second},
		{URL: "http://h/x", Addrs: []string{"nocolon"}},
	} {
		if _, err := NewHTTP(o); !errors.Is(err, ErrInvalid) {
			t.Errorf("NewHTTP(%+v) = %v, want ErrInvalid", o, err)
		}
	}
}

func TestClassifyError(t *testing.T) {
	cases := []struct {
		err  error
		want bench.Outcome
	}{
		{nil, bench.OK},
		{fasthttp.ErrTimeout, bench.ErrTimeout},
		{fasthttp.ErrDialTimeout, bench.ErrTimeout},
		{context.DeadlineExceeded, bench.ErrTimeout},
		{fasthttp.ErrConnectionClosed, bench.ErrConn},
		{fasthttp.ErrNoFreeConns, bench.ErrConn},
		{httpc.ErrNoFreeConns, bench.ErrTimeout},
		{httpc.ErrBadResponse, bench.ErrOther},
		{httpc.ErrTooLarge, bench.ErrOther},
		{io.EOF, bench.ErrConn},
		{fmt.Errorf("dial: %w", syscall.ECONNREFUSED), bench.ErrConn},
		{&net.OpError{Op: "read", Err: syscall.ECONNRESET}, bench.ErrConn},
		{errors.New("weird"), bench.ErrOther},
	}
	for _, c := range cases {
		if got := ClassifyError(c.err); got != c.want {
			t.Errorf("ClassifyError(%v) = %v, want %v", c.err, got, c.want)
		}
	}
	for status, want := range map[int]bench.Outcome{200: bench.OK, 204: bench.NoBid, 301: bench.ErrOther, 404: bench.ErrStatus4xx, 429: bench.ErrStatus4xx, 500: bench.ErrStatus5xx, 504: bench.ErrStatus5xx, 100: bench.ErrOther} {
		if got := ClassifyHTTPStatus(status, nil); got != want {
			t.Errorf("ClassifyHTTPStatus(%d) = %v, want %v", status, got, want)
		}
	}
}

// startGRPC serves every method through an unknown-service handler whose
// behaviour is chosen by the method name.
func startGRPC(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(grpc.UnknownServiceHandler(func(_ any, stream grpc.ServerStream) error {
		method, _ := grpc.MethodFromServerStream(stream)
		var in emptypb.Empty
		if err := stream.RecvMsg(&in); err != nil {
			return err
		}
		switch method {
		case "/t.T/OK":
			return stream.SendMsg(&emptypb.Empty{})
		case "/t.T/Invalid":
			return status.Error(codes.InvalidArgument, "bad request")
		case "/t.T/Internal":
			return status.Error(codes.Internal, "boom")
		case "/t.T/Slow":
			// Past the caller's deadline the handler answers with the
			// context's status, never with OK: the server's copy of the
			// deadline can fire before the client's, and an OK sent then
			// would beat the client's own timer (seen under -race in CI).
			select {
			case <-time.After(2 * time.Second):
				return stream.SendMsg(&emptypb.Empty{})
			case <-stream.Context().Done():
				return status.FromContextError(stream.Context().Err()).Err()
			}
		}
		return status.Error(codes.Unimplemented, method)
	}))
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	return ln.Addr().String()
}

func dialGRPC(t *testing.T, addr string) *grpc.ClientConn {
	t.Helper()
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

func invoke(method string) func(ctx context.Context, w *bench.Worker, cc grpc.ClientConnInterface) error {
	return func(ctx context.Context, w *bench.Worker, cc grpc.ClientConnInterface) error {
		return cc.Invoke(ctx, method, &emptypb.Empty{}, &emptypb.Empty{})
	}
}

func TestGRPCTarget(t *testing.T) {
	cc := dialGRPC(t, startGRPC(t))
	for method, want := range map[string]bench.Outcome{
		"/t.T/OK":       bench.OK,
		"/t.T/Invalid":  bench.ErrStatus4xx,
		"/t.T/Internal": bench.ErrStatus5xx,
		"/t.T/Nope":     bench.ErrStatus5xx, // Unimplemented
		"/t.T/Slow":     bench.ErrTimeout,
	} {
		g, err := NewGRPC(GRPCOptions{Name: method, Conn: cc, Call: invoke(method)})
		if err != nil {
			t.Fatal(err)
		}
		w := bench.NewWorker(0, 0)
		w.Deadline = time.Now().Add(100 * time.Millisecond)
		if got := g.Do(context.Background(), w); got != want {
			t.Errorf("%s: %v, want %v", method, got, want)
		}
	}
	refused, err := NewGRPC(GRPCOptions{Name: "refused", Conn: dialGRPC(t, closedPort(t)), Call: invoke("/t.T/OK"), Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if got := refused.Do(context.Background(), bench.NewWorker(0, 0)); got != bench.ErrConn {
		t.Errorf("refused: %v, want conn", got)
	}

	// Driven by the harness: every request of a short open-loop run is OK.
	ok, _ := NewGRPC(GRPCOptions{Name: "catalog", Conn: cc, Call: invoke("/t.T/OK")})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := bench.RunOpenLoop(ctx, ok, bench.OpenLoopOptions{Rate: 200, Duration: time.Second, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if r.Requests != 200 || r.Successes != 200 || r.Target != "catalog" {
		t.Errorf("open loop over gRPC: %d requests, %d ok, errors %+v", r.Requests, r.Successes, r.Errors)
	}
}

func TestNewGRPCValidates(t *testing.T) {
	if _, err := NewGRPC(GRPCOptions{}); !errors.Is(err, ErrInvalid) {
		t.Errorf("empty options: %v", err)
	}
}

func TestClassifyGRPC(t *testing.T) {
	want := map[codes.Code]bench.Outcome{
		codes.OK: bench.OK, codes.DeadlineExceeded: bench.ErrTimeout, codes.Unavailable: bench.ErrConn,
		codes.InvalidArgument: bench.ErrStatus4xx, codes.NotFound: bench.ErrStatus4xx, codes.AlreadyExists: bench.ErrStatus4xx,
		codes.PermissionDenied: bench.ErrStatus4xx, codes.Unauthenticated: bench.ErrStatus4xx, codes.FailedPrecondition: bench.ErrStatus4xx,
		codes.OutOfRange: bench.ErrStatus4xx, codes.ResourceExhausted: bench.ErrStatus4xx, codes.Aborted: bench.ErrStatus4xx,
		codes.Internal: bench.ErrStatus5xx, codes.Unknown: bench.ErrStatus5xx, codes.Unimplemented: bench.ErrStatus5xx,
		codes.DataLoss: bench.ErrStatus5xx, codes.Canceled: bench.ErrOther,
	}
	for c, o := range want {
		var err error
		if c != codes.OK {
			err = status.Error(c, "x")
		}
		if got := ClassifyGRPC(err); got != o {
			t.Errorf("%v: %v, want %v", c, got, o)
		}
	}
	if got := ClassifyGRPC(fmt.Errorf("wrapped: %w", context.DeadlineExceeded)); got != bench.ErrTimeout {
		t.Errorf("plain deadline: %v", got)
	}
	if got := ClassifyGRPC(errors.New("x")); got != bench.ErrOther {
		t.Errorf("plain error: %v", got)
	}
}
