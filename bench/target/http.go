package target

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/rtbd/rtbd/bench"
)

// ErrInvalid is wrapped by option validation errors of this package.
var ErrInvalid = errors.New("target: invalid options")

// HTTPOptions configure an HTTP target.
type HTTPOptions struct {
	// Name is the target's name in results. Zero: the URL's path.
	Name string
	// URL is the full request URL, e.g. "http://127.0.0.1:8080/openrtb2".
	// Required; scheme http or https.
	URL string
	// Addrs optionally overrides the host of URL with a list of upstream
	// "host:port" addresses. The HostClient dials them round-robin, so it
	// spreads connections (not single requests) across them: with
	// keep-alive, a load spreads once it needs several connections.
	Addrs []string
	// Method defaults to POST.
	Method string
	// ContentType defaults to "application/json".
	ContentType string
	// Header lines added to every request.
	Header map[string]string
	// Body appends the body of the next request to dst and returns it. It
	// runs on the worker's goroutine with the worker's scratch (w.Buf is
	// passed as dst, and the result kept in w.Buf), so it may use w.Rand
	// freely. nil: empty body.
	Body func(w *bench.Worker, dst []byte) []byte
	// Check, if set, classifies an answer from its status code and body
	// (the body is only valid during the call). nil: 200 = OK, 204 =
	// NoBid, 4xx = ErrStatus4xx, 5xx = ErrStatus5xx, else ErrOther.
	Check func(status int, body []byte) bench.Outcome
	// MaxConns bounds the connections to the upstream. Zero: 1024 (match
	// it to the run's MaxInFlight so requests never wait for a conn).
	MaxConns int
	// Timeout is used only when the worker has no deadline (a run with
	// Timeout disabled). Zero: 1 s.
	Timeout time.Duration
}

// HTTP is a bench.Target sending one HTTP request per Do through a
// fasthttp.HostClient with keep-alive connections. Safe for concurrent use.
type HTTP struct {
	name        string
	uri         string
	method      string
	contentType string
	header      [][2]string
	body        func(w *bench.Worker, dst []byte) []byte
	check       func(status int, body []byte) bench.Outcome
	timeout     time.Duration
	client      *fasthttp.HostClient
}

// NewHTTP validates o and returns the target.
func NewHTTP(o HTTPOptions) (*HTTP, error) {
	var probs []string
	u, err := url.Parse(o.URL)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		probs = append(probs, fmt.Sprintf("url: want http(s)://host[:port]/path, got %q", o.URL))
	}
	if o.MaxConns < 0 {
		probs = append(probs, fmt.Sprintf("max_conns: must be >= 0, got %d", o.MaxConns))
	}
	if o.Timeout < 0 {
		probs = append(probs, fmt.Sprintf("timeout: must be >= 0, got %v", o.Timeout))
	}
	for i, a := range o.Addrs {
		if _, _, err := net.SplitHostPort(a); err != nil {
			probs = append(probs, fmt.Sprintf("addrs[%d]: %v", i, err))
		}
	}
	if len(probs) > 0 {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, probs)
	}
	h := &HTTP{
		name:        o.Name,
		uri:         u.String(),
		method:      o.Method,
		contentType: o.ContentType,
		body:        o.Body,
		check:       o.Check,
		timeout:     o.Timeout,
	}
	if h.name == "" {
		h.name = u.Path
	}
	if h.method == "" {
		h.method = fasthttp.MethodPost
	}
	if h.contentType == "" {
		h.contentType = "application/json"
	}
	if h.check == nil {
		h.check = ClassifyHTTPStatus
	}
	if h.timeout == 0 {
		h.timeout = time.Second
	}
	for k, v := range o.Header {
		h.header = append(h.header, [2]string{k, v})
	}
	addr := u.Host
	if u.Port() == "" {
		if u.Scheme == "https" {
			addr += ":443"
		} else {
			addr += ":80"
		}
	}
	if len(o.Addrs) > 0 {
		addr = ""
		for i, a := range o.Addrs {
			if i > 0 {
				addr += ","
			}
			addr += a
		}
	}
	maxConns := o.MaxConns
	if maxConns == 0 {
		maxConns = 1024
	}
	h.client = &fasthttp.HostClient{
		Addr:                      addr,
		IsTLS:                     u.Scheme == "https",
		MaxConns:                  maxConns,
		MaxConnWaitTimeout:        h.timeout,
		MaxIdemponentCallAttempts: 1, // a benchmark must see failures, not hide them in retries
		// LIFO keeps a small hot set of connections in use after a burst;
		// the rest idle out (FIFO would cycle through all of them forever).
		ConnPoolStrategy:         fasthttp.LIFO,
		NoDefaultUserAgentHeader: true,
		DisablePathNormalizing:   true,
	}
	return h, nil
}

// Name implements bench.Target.
func (h *HTTP) Name() string { return h.name }

// Client exposes the underlying HostClient (for its connection counters).
func (h *HTTP) Client() *fasthttp.HostClient { return h.client }

// Do implements bench.Target: it sends one request and classifies the
// answer. It does not watch ctx (fasthttp has no context support); the
// request ends by w.Deadline at the latest.
func (h *HTTP) Do(_ context.Context, w *bench.Worker) bench.Outcome {
	req := fasthttp.AcquireRequest()
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI(h.uri)
	req.Header.SetMethod(h.method)
	req.Header.SetContentType(h.contentType)
	for _, kv := range h.header {
		req.Header.Set(kv[0], kv[1])
	}
	if h.body != nil {
		w.Buf = h.body(w, w.Buf[:0])
		req.SetBodyRaw(w.Buf) // w.Buf is owned by this worker until Do returns
	}
	var err error
	if w.Deadline.IsZero() {
		err = h.client.DoTimeout(req, resp, h.timeout)
	} else {
		err = h.client.DoDeadline(req, resp, w.Deadline)
	}
	if err != nil {
		return ClassifyError(err)
	}
	return h.check(resp.StatusCode(), resp.Body())
}

// ClassifyHTTPStatus is the default HTTP classification: 200 = OK, 204 =
// NoBid, 4xx, 5xx, anything else ErrOther.
func ClassifyHTTPStatus(status int, _ []byte) bench.Outcome {
	switch {
	case status == fasthttp.StatusOK:
		return bench.OK
	case status == fasthttp.StatusNoContent:
		return bench.NoBid
	case status >= 400 && status < 500:
		return bench.ErrStatus4xx
	case status >= 500 && status < 600:
		return bench.ErrStatus5xx
	}
	return bench.ErrOther
}

// ClassifyError maps a transport error to an outcome: timeouts (fasthttp
// ErrTimeout, ErrDialTimeout, net.Error timeouts, context deadline) to
// ErrTimeout; refused, reset, broken or closed connections and other
// network errors to ErrConn; anything else to ErrOther.
func ClassifyError(err error) bench.Outcome {
	var ne net.Error
	switch {
	case err == nil:
		return bench.OK
	case errors.Is(err, fasthttp.ErrTimeout), errors.Is(err, fasthttp.ErrDialTimeout),
		errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return bench.ErrTimeout
	case errors.Is(err, fasthttp.ErrConnectionClosed), errors.Is(err, fasthttp.ErrNoFreeConns),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EPIPE), errors.Is(err, net.ErrClosed):
		return bench.ErrConn
	}
	var oe *net.OpError
	if errors.As(err, &oe) {
		return bench.ErrConn
	}
	return bench.ErrOther
}
