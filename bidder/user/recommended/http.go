package recommended

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/rtbd/rtbd/bidder/user"
)

// Path is the bidder's admin route that loads a request body's lines into
// the running bidder's user store (Handler).
const Path = "/admin/users/recommended"

// Answer is the JSON answer of the route: Load's Summary, the first
// MaxReported rejected or failed lines ("line N: reason"), the store it
// wrote to, and Error when the load stopped.
type Answer struct {
	Lines    int      `json:"lines"`
	Set      int      `json:"set"`
	Cleared  int      `json:"cleared"`
	Rejected int      `json:"rejected"`
	Failed   int      `json:"failed"`
	Rejects  []string `json:"rejects"`
	Store    string   `json:"store,omitempty"`
	Error    string   `json:"error,omitempty"`
}

// HandlerOptions configure Handler.
type HandlerOptions struct {
	// Limits are the store's (userstores.Opened.Limits).
	Limits user.Limits
	// Workers is how many writes run at once: 1 for the embedded store.
	Workers int
	// Timeout bounds each write. Default 5 s.
	Timeout time.Duration
	// Where names the store in the answer and the log ("redis ADDR").
	Where string
	// Logger gets one line per load. nil: none.
	Logger *zap.Logger
	// Registerer gets rtbd_users_recommended_loads_total and
	// rtbd_users_recommended_lines_total. nil: not counted.
	Registerer prometheus.Registerer
}

// handlerMetrics count the loads by how they ended and their lines by
// what became of them.
type handlerMetrics struct {
	loads, lines *prometheus.CounterVec
}

func newHandlerMetrics(reg prometheus.Registerer) handlerMetrics {
	m := handlerMetrics{
		loads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rtbd_users_recommended_loads_total",
			Help: "Loads of POST /admin/users/recommended by how they ended: ok (the whole body read), store_error, stopped (client gone or shutdown), bad_body.",
		}, []string{"result"}),
		lines: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rtbd_users_recommended_lines_total",
			Help: "Lines of POST /admin/users/recommended by result: written (a user's list set or cleared), rejected (not parsable or breaking a rule), failed (the store refused that user).",
		}, []string{"result"}),
	}
	if reg != nil {
		reg.MustRegister(m.loads, m.lines)
	}
	for _, r := range []string{"ok", "store_error", "stopped", "bad_body"} {
		m.loads.WithLabelValues(r)
	}
	for _, r := range []string{"written", "rejected", "failed"} {
		m.lines.WithLabelValues(r)
	}
	return m
}

// contentTypes are the media types the route accepts; a request without a
// Content-Type is taken as JSON Lines too.
var contentTypes = map[string]bool{
	"application/x-ndjson": true, "application/jsonl": true, "application/json": true, "text/plain": true,
}

// Handler serves POST Path: the body, JSON Lines as `rtbd users recommend
// -in` reads, is streamed through Load into s (never held whole). Answers
// (JSON, an Answer): 200 once the whole body was read (rejected lines are
// listed, the others written); 503 with the summary so far when the store
// failed (ErrStore) or the request's context ended (the client went
// away, or the server stopped the load: its cause is the error); 400 for
// a body that could not be read; 415 for a
// Content-Type other than application/x-ndjson, application/jsonl,
// application/json or text/plain (parameters such as charset are
// ignored); 501 when s is nil (the configured user store cannot set
// recommendations).
func Handler(s Setter, o HandlerOptions) http.Handler {
	log := o.Logger
	if log == nil {
		log = zap.NewNop()
	}
	m := newHandlerMetrics(o.Registerer)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s == nil {
			writeAnswer(w, http.StatusNotImplemented, &Answer{Rejects: []string{}, Store: o.Where,
				Error: "the configured user store cannot set recommended products"})
			return
		}
		if ct := r.Header.Get("Content-Type"); ct != "" {
			mt, _, err := mime.ParseMediaType(ct)
			if err != nil || !contentTypes[mt] {
				writeAnswer(w, http.StatusUnsupportedMediaType, &Answer{Rejects: []string{},
					Error: fmt.Sprintf("Content-Type %q: want JSON Lines (application/x-ndjson, application/jsonl, application/json or text/plain)", ct)})
				return
			}
		}
		// A body read waiting for a client's next bytes does not see the
		// context: once it ends, the read deadline ends that wait too.
		unblock := context.AfterFunc(r.Context(), func() {
			_ = http.NewResponseController(w).SetReadDeadline(time.Now())
		})
		defer unblock()
		rejects := &rejectList{lines: []string{}, max: defaultMaxReported}
		start := time.Now()
		sum, err := Load(r.Context(), s, r.Body, Options{Limits: o.Limits, Workers: o.Workers, Timeout: o.Timeout,
			Rejects: rejects, MaxReported: defaultMaxReported})
		a := &Answer{Lines: sum.Lines, Set: sum.Set, Cleared: sum.Cleared, Rejected: sum.Rejected, Failed: sum.Failed,
			Rejects: rejects.lines, Store: o.Where}
		fields := []zap.Field{zap.String("store", o.Where), zap.Int("lines", sum.Lines), zap.Int("set", sum.Set),
			zap.Int("cleared", sum.Cleared), zap.Int("rejected", sum.Rejected), zap.Int("failed", sum.Failed),
			zap.Duration("took", time.Since(start)), zap.String("remote", r.RemoteAddr)}
		m.lines.WithLabelValues("written").Add(float64(sum.Set))
		m.lines.WithLabelValues("rejected").Add(float64(sum.Rejected))
		m.lines.WithLabelValues("failed").Add(float64(sum.Failed))
		status, result := http.StatusOK, "ok"
		switch {
		case err == nil:
			log.Info("users recommended: loaded", fields...)
		case r.Context().Err() != nil:
			result = "stopped"
			// The client went away (nobody reads the answer), or the
			// server stopped the load (shutting down): the cause says.
			status = http.StatusServiceUnavailable
			cause := context.Cause(r.Context())
			a.Error = "the load stopped before the end of the body: " + cause.Error()
			log.Warn("users recommended: the load stopped before the end of the body", append(fields, zap.NamedError("cause", cause), zap.Error(err))...)
		case errors.Is(err, ErrStore):
			status, result = http.StatusServiceUnavailable, "store_error"
			a.Error = err.Error()
			log.Error("users recommended: the user store failed; the load stopped", append(fields, zap.Error(err))...)
		default:
			status, result = http.StatusBadRequest, "bad_body"
			a.Error = err.Error()
			log.Warn("users recommended: the body could not be read; the load stopped", append(fields, zap.Error(err))...)
		}
		m.loads.WithLabelValues(result).Inc()
		writeAnswer(w, status, a)
	})
}

const defaultMaxReported = 100

func writeAnswer(w http.ResponseWriter, status int, a *Answer) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false) // reasons say "must be > 0"
	_ = enc.Encode(a)
}

// rejectList keeps the "line N: reason" lines Load writes (one per Write,
// under Load's lock), up to max.
type rejectList struct {
	lines []string
	max   int
}

func (l *rejectList) Write(p []byte) (int, error) {
	s := strings.TrimSuffix(string(p), "\n")
	if len(l.lines) < l.max && strings.HasPrefix(s, "line ") {
		l.lines = append(l.lines, s)
	}
	return len(p), nil
}

// ErrBidder is wrapped by post's error when the bidder did not answer 200.
var ErrBidder = errors.New("recommended: the bidder refused the load")

// post streams in to the bidder's admin route at base (http://HOST:PORT)
// as application/x-ndjson and returns its Answer. A non-2xx answer is an
// error wrapping ErrBidder that names the status and the answer's error;
// the Answer is returned with it when the body was one.
func post(ctx context.Context, base string, in io.Reader) (*Answer, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(base, "/")+Path, in)
	if err != nil {
		return nil, fmt.Errorf("%w: -bidder: %w", ErrUsage, err)
	}
	req.Header.Set("Content-Type", "application/x-ndjson")
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("recommended: posting to the bidder: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("recommended: reading the bidder's answer (%s): %w", resp.Status, err)
	}
	var a Answer
	jerr := json.Unmarshal(body, &a)
	if resp.StatusCode/100 != 2 {
		msg := a.Error
		if jerr != nil || msg == "" {
			msg = string(bytes.TrimSpace(body))
			if len(msg) > 300 {
				msg = msg[:300] + "..."
			}
		}
		if jerr != nil {
			return nil, fmt.Errorf("%w: %s %s: %s", ErrBidder, req.URL, resp.Status, msg)
		}
		return &a, fmt.Errorf("%w: %s %s: %s", ErrBidder, req.URL, resp.Status, msg)
	}
	if jerr != nil {
		return nil, fmt.Errorf("recommended: the bidder's answer (%s) is not JSON: %w", resp.Status, jerr)
	}
	return &a, nil
}

// checkBidderURL checks -bidder: an http or https URL with a host.
func checkBidderURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("%w: -bidder %q: want the bidder's admin listener as http://HOST:PORT", ErrUsage, s)
	}
	return nil
}
