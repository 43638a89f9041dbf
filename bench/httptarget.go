package bench

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/rtbd/rtbd/bench/internal/httpc"
)

// httpTarget is the scenarios' HTTP target: one request per Do through
// the harness's HTTP/1.1 client (bench/internal/httpc) with keep-alive
// connections, the request URI and body built per request.
// (bench/internal/target.HTTP is the general one; it cannot be used here
// because it imports bench.) Safe for concurrent use.
type httpTarget struct {
	name   string
	method string
	// uri appends the path and query of the next request to dst.
	uri func(w *Worker, dst []byte) []byte
	// body, if set, appends the next request's body to dst (POST).
	body func(w *Worker, dst []byte) []byte
	// check classifies an answer; the body is valid only during the call.
	check func(status int, body []byte) Outcome
	// checkHeader, if set, makes check get this response header's value
	// instead of the body.
	checkHeader string
	client      *httpc.Client
}

// httpScratch is a worker's reusable request and response (Worker.State).
type httpScratch struct {
	req  httpc.Request
	resp httpc.Response
}

// scratch returns w's httpScratch, made with method on first use.
func scratch(w *Worker, method string) *httpScratch {
	s, _ := w.State.(*httpScratch)
	if s == nil {
		s = &httpScratch{req: httpc.Request{Method: method}}
		w.State = s
	}
	return s
}

// setBody makes body's output (in w.Buf) the JSON body of the request; a
// nil body sends none.
func (s *httpScratch) setBody(w *Worker, body func(w *Worker, dst []byte) []byte) {
	s.req.Body, s.req.ContentType = nil, ""
	if body != nil {
		w.Buf = body(w, w.Buf[:0])
		s.req.Body, s.req.ContentType = w.Buf, "application/json"
	}
}

func newHTTPTarget(name, addr, method string, maxConns int, uri, body func(*Worker, []byte) []byte, check func(int, []byte) Outcome) *httpTarget {
	if check == nil {
		check = ClassifyHTTPStatus
	}
	c, err := httpc.New(httpc.Options{Addrs: []string{addr}, MaxConns: maxConns})
	if err != nil {
		panic(err) // addr comes from a server this harness started
	}
	return &httpTarget{name: name, method: method, uri: uri, body: body, check: check, client: c}
}

func (h *httpTarget) Name() string { return h.name }

func (h *httpTarget) Do(_ context.Context, w *Worker) Outcome {
	s := scratch(w, h.method)
	s.req.URI = h.uri(w, s.req.URI[:0])
	s.setBody(w, h.body)
	deadline := w.Deadline
	if deadline.IsZero() {
		deadline = time.Now().Add(DefaultTimeout)
	}
	if err := h.client.Do(&s.req, deadline, &s.resp); err != nil {
		return ClassifyError(err)
	}
	if h.checkHeader != "" {
		return h.check(s.resp.Status, s.resp.Header(h.checkHeader))
	}
	return h.check(s.resp.Status, s.resp.Body)
}

// ClassifyHTTPStatus is the harness's HTTP classification: 200 = OK, 204 =
// NoBid, 4xx = ErrStatus4xx, 5xx = ErrStatus5xx, anything else ErrOther.
func ClassifyHTTPStatus(status int, _ []byte) Outcome {
	switch {
	case status == 200:
		return OK
	case status == 204:
		return NoBid
	case status >= 400 && status < 500:
		return ErrStatus4xx
	case status >= 500 && status < 600:
		return ErrStatus5xx
	}
	return ErrOther
}

// ClassifyError maps a transport error to an outcome:
//   - ErrTimeout: a deadline passed (a net.Error whose Timeout() is true,
//     context.DeadlineExceeded, httpc.ErrNoFreeConns: no connection came
//     free before the request's deadline, and fasthttp's timeouts);
//   - ErrConn: refused, reset, broken or closed connections and other
//     network errors;
//   - ErrOther: anything else (e.g. httpc.ErrBadResponse, ErrTooLarge).
func ClassifyError(err error) Outcome {
	var ne net.Error
	switch {
	case err == nil:
		return OK
	case errors.Is(err, httpc.ErrNoFreeConns), errors.Is(err, fasthttp.ErrTimeout), errors.Is(err, fasthttp.ErrDialTimeout),
		errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return ErrTimeout
	case errors.Is(err, fasthttp.ErrConnectionClosed), errors.Is(err, fasthttp.ErrNoFreeConns),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EPIPE), errors.Is(err, net.ErrClosed):
		return ErrConn
	}
	var oe *net.OpError
	if errors.As(err, &oe) {
		return ErrConn
	}
	return ErrOther
}
