package target

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"time"

	"github.com/rtbd/rtbd/bench"
	"github.com/rtbd/rtbd/bench/internal/httpc"
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
	// "host:port" addresses. The client dials them round-robin, so it
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

// HTTP is a bench.Target sending one HTTP/1.1 request per Do through the
// harness's own client (bench/httpc: keep-alive connections, no retries).
// Safe for concurrent use.
type HTTP struct {
	name        string
	uri         []byte // request target: path and query
	method      string
	contentType string
	header      [][2]string
	body        func(w *bench.Worker, dst []byte) []byte
	check       func(status int, body []byte) bench.Outcome
	timeout     time.Duration
	client      *httpc.Client
}

// httpState is a worker's reusable request and response (Worker.State).
type httpState struct {
	req  httpc.Request
	resp httpc.Response
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
		name:        cmp.Or(o.Name, u.Path),
		uri:         []byte(u.RequestURI()),
		method:      cmp.Or(o.Method, "POST"),
		contentType: cmp.Or(o.ContentType, "application/json"),
		body:        o.Body,
		check:       o.Check,
		timeout:     cmp.Or(o.Timeout, time.Second),
	}
	if h.check == nil {
		h.check = ClassifyHTTPStatus
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
	addrs := o.Addrs
	if len(addrs) == 0 {
		addrs = []string{addr}
	}
	var tc *tls.Config
	if u.Scheme == "https" {
		tc = &tls.Config{}
	}
	// MaxConns: zero is httpc's default, 1024 (match it to the run's
	// MaxInFlight so requests never wait for a conn).
	h.client, err = httpc.New(httpc.Options{Addrs: addrs, Host: u.Host, TLS: tc, MaxConns: o.MaxConns})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return h, nil
}

// Name implements bench.Target.
func (h *HTTP) Name() string { return h.name }

// Client exposes the underlying client (for its connection counters).
func (h *HTTP) Client() *httpc.Client { return h.client }

// Do implements bench.Target: it sends one request and classifies the
// answer. It does not watch ctx; the request ends by w.Deadline (or the
// Timeout option when the run has none) at the latest.
func (h *HTTP) Do(_ context.Context, w *bench.Worker) bench.Outcome {
	s, _ := w.State.(*httpState)
	if s == nil {
		s = &httpState{req: httpc.Request{Method: h.method, URI: h.uri, ContentType: h.contentType, Header: h.header}}
		w.State = s
	}
	s.req.Body = nil
	if h.body != nil {
		w.Buf = h.body(w, w.Buf[:0])
		s.req.Body = w.Buf // w.Buf is owned by this worker until Do returns
	}
	deadline := w.Deadline
	if deadline.IsZero() {
		deadline = time.Now().Add(h.timeout)
	}
	if err := h.client.Do(&s.req, deadline, &s.resp); err != nil {
		return ClassifyError(err)
	}
	return h.check(s.resp.Status, s.resp.Body)
}

// ClassifyHTTPStatus is the default HTTP classification: 200 = OK, 204 =
// NoBid, 4xx, 5xx, anything else ErrOther (bench.ClassifyHTTPStatus).
func ClassifyHTTPStatus(status int, body []byte) bench.Outcome {
	return bench.ClassifyHTTPStatus(status, body)
}

// ClassifyError maps a transport error to an outcome as the harness does
// (bench.ClassifyError): timeouts, including no free connection before the
// deadline, to ErrTimeout; refused, reset, broken or closed connections
// and other network errors to ErrConn; anything else to ErrOther.
func ClassifyError(err error) bench.Outcome { return bench.ClassifyError(err) }
