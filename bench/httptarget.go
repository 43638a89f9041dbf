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
// fasthttp.HostClient with keep-alive connections, the request URI and body
// built per request. (bench/target.HTTP is the general one for library
// users; it cannot be used here because bench/target imports bench.)
// Safe for concurrent use.
type httpTarget struct {
	name   string
	origin string // "http://host:port"
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
	client      *fasthttp.HostClient
}

// httpScratch is a worker's reusable buffers (Worker.State).
type httpScratch struct{ uri, body []byte }

func newHTTPTarget(name, addr, method string, maxConns int, uri, body func(*Worker, []byte) []byte, check func(int, []byte) Outcome) *httpTarget {
	if check == nil {
		check = classifyHTTPStatus
	}
	return &httpTarget{
		name: name, origin: "http://" + addr, method: method, uri: uri, body: body, check: check,
		client: &fasthttp.HostClient{
			Addr:                      addr,
			MaxConns:                  maxConns,
			MaxConnWaitTimeout:        time.Second,
			MaxIdemponentCallAttempts: 1, // a benchmark must see failures, not retry them away
			ConnPoolStrategy:          fasthttp.LIFO,
			NoDefaultUserAgentHeader:  true,
			DisablePathNormalizing:    true,
			ReadTimeout:               10 * time.Second,
			WriteTimeout:              10 * time.Second,
		},
	}
}

func (h *httpTarget) Name() string { return h.name }

func (h *httpTarget) Do(_ context.Context, w *Worker) Outcome {
	s, _ := w.State.(*httpScratch)
	if s == nil {
		s = &httpScratch{}
		w.State = s
	}
	req := fasthttp.AcquireRequest()
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	s.uri = append(s.uri[:0], h.origin...)
	s.uri = h.uri(w, s.uri)
	req.SetRequestURIBytes(s.uri)
	req.Header.SetMethod(h.method)
	if h.body != nil {
		s.body = h.body(w, s.body[:0])
		req.Header.SetContentType("application/json")
		req.SetBodyRaw(s.body)
	}
	var err error
	if w.Deadline.IsZero() {
		err = h.client.DoTimeout(req, resp, DefaultTimeout)
	} else {
		err = h.client.DoDeadline(req, resp, w.Deadline)
	}
	if err != nil {
		return classifyHTTPError(err)
	}
	if h.checkHeader != "" {
		return h.check(resp.StatusCode(), resp.Header.Peek(h.checkHeader))
	}
	return h.check(resp.StatusCode(), resp.Body())
}

// classifyHTTPStatus: 200 = OK, 204 = NoBid, 4xx, 5xx, else ErrOther.
func classifyHTTPStatus(status int, _ []byte) Outcome {
	switch {
	case status == fasthttp.StatusOK:
		return OK
	case status == fasthttp.StatusNoContent:
		return NoBid
	case status >= 400 && status < 500:
		return ErrStatus4xx
	case status >= 500 && status < 600:
		return ErrStatus5xx
	}
	return ErrOther
}

// classifyHTTPError maps a transport error as bench/target.ClassifyError
// does: timeouts, connection failures, anything else.
func classifyHTTPError(err error) Outcome {
	var ne net.Error
	switch {
	case errors.Is(err, fasthttp.ErrTimeout), errors.Is(err, fasthttp.ErrDialTimeout),
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
