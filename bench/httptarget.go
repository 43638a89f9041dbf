package bench

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"
)

// httpTarget is the scenarios' HTTP target: one request per Do through a
// fasthttp.HostClient with keep-alive connections, the request URI and
// body built per request. Safe for concurrent use.
type httpTarget struct {
	name, method string
	uri          func(w *Worker, dst []byte) []byte    // appends the next request's path and query to dst; none: ErrOther, not sent
	body         func(w *Worker, dst []byte) []byte    // if set, appends the next request's body to dst
	check        func(status int, body []byte) Outcome // the body is valid only during the call
	checkHeader  string                                // if set, check gets this response header instead of the body
	client       *fasthttp.HostClient
}

// newHTTPClient is the harness's client of one server: no retries (a
// notice is sent once, so its outcome is known exactly), no
// normalisation of the paths it replays.
func newHTTPClient(addr string, maxConns int) *fasthttp.HostClient {
	return &fasthttp.HostClient{
		Addr:                      addr,
		MaxConns:                  maxConns,
		MaxConnWaitTimeout:        DefaultTimeout,
		MaxIdleConnDuration:       5 * time.Second,
		MaxIdemponentCallAttempts: 1,
		DisablePathNormalizing:    true,
		NoDefaultUserAgentHeader:  true,
	}
}

// httpScratch is a worker's reusable request, response and URI buffer
// (Worker.State).
type httpScratch struct {
	req  fasthttp.Request
	resp fasthttp.Response
	uri  []byte
}

// scratch returns w's httpScratch, made with method on first use.
func scratch(w *Worker, method string) *httpScratch {
	s, _ := w.State.(*httpScratch)
	if s == nil {
		s = &httpScratch{}
		s.req.Header.SetMethod(method)
		w.State = s
	}
	return s
}

// do sends the request to c by w.Deadline (DefaultTimeout from now when
// none): URI s.uri, and the JSON body from body (in w.Buf) unless body is nil.
func (s *httpScratch) do(w *Worker, c *fasthttp.HostClient, body func(w *Worker, dst []byte) []byte) error {
	s.req.SetRequestURIBytes(s.uri)
	s.req.SetHost(c.Addr)
	s.req.ResetBody()
	if body != nil {
		w.Buf = body(w, w.Buf[:0])
		s.req.SetBodyRaw(w.Buf)
		s.req.Header.SetContentType("application/json")
	}
	deadline := w.Deadline
	if deadline.IsZero() {
		deadline = time.Now().Add(DefaultTimeout)
	}
	return c.DoDeadline(&s.req, &s.resp, deadline)
}

func newHTTPTarget(name, addr, method string, maxConns int, uri, body func(*Worker, []byte) []byte, check func(int, []byte) Outcome) *httpTarget {
	if check == nil {
		check = ClassifyHTTPStatus
	}
	return &httpTarget{name: name, method: method, uri: uri, body: body, check: check, client: newHTTPClient(addr, maxConns)}
}

func (h *httpTarget) Name() string { return h.name }

func (h *httpTarget) Do(_ context.Context, w *Worker) Outcome {
	s := scratch(w, h.method)
	if s.uri = h.uri(w, s.uri[:0]); len(s.uri) == 0 {
		return ErrOther // nothing to send yet (no win notice harvested)
	}
	if err := s.do(w, h.client, h.body); err != nil {
		return ClassifyError(err)
	}
	if h.checkHeader != "" {
		return h.check(s.resp.StatusCode(), s.resp.Header.Peek(h.checkHeader))
	}
	return h.check(s.resp.StatusCode(), s.resp.Body())
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

// ClassifyError maps a transport error to an outcome: a passed deadline
// is ErrTimeout, a refused, reset, broken or closed connection (or another
// network error) ErrConn, anything else (a malformed response) ErrOther.
func ClassifyError(err error) Outcome {
	var ne net.Error
	switch {
	case err == nil:
		return OK
	case errors.Is(err, fasthttp.ErrTimeout), errors.Is(err, fasthttp.ErrDialTimeout),
		errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return ErrTimeout
	case errors.Is(err, fasthttp.ErrConnectionClosed), errors.Is(err, fasthttp.ErrNoFreeConns),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EPIPE), errors.Is(err, net.ErrClosed), errors.As(err, new(*net.OpError)):
		return ErrConn
	}
	return ErrOther
}
