package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"
)

// Target is one kind of request the harness sends: a bid request to a
// bidder, a win notice, a catalog lookup, ...
//
// Do sends one request and classifies its result. It is called concurrently
// from many goroutines, each with its own *Worker; a Target must be safe for
// that. ctx is the run's context: it is cancelled when the run is aborted,
// never per request. The per-request hard deadline is w.Deadline (zero when
// the run has no timeout); Do must give up by then and return ErrTimeout.
// The harness measures latency itself; Do does not time anything.
type Target interface {
	Name() string
	Do(ctx context.Context, w *Worker) Outcome
}

// Outcome classifies one request. The zero value is OK.
type Outcome uint8

// Outcomes. DeadlineMiss means the request was answered (OK or NoBid) but
// later than the run's Tmax; the harness assigns it itself when Tmax is set,
// and a Target may return it directly too.
const (
	OK           Outcome = iota // answered with content (a bid, a catalog hit)
	NoBid                       // answered, nothing to return (HTTP 204)
	ErrTimeout                  // no answer by the hard deadline, or expired in the generator queue
	ErrConn                     // connect/reset/closed connection, gRPC Unavailable
	ErrStatus4xx                // client-error status (HTTP 4xx, gRPC InvalidArgument, NotFound, ...)
	ErrStatus5xx                // server-error status (HTTP 5xx, gRPC Internal, Unknown, ...)
	ErrOther                    // anything else (unexpected status, bad response body, ...)
	DeadlineMiss                // answered after the request's Tmax
	numOutcomes
)

var outcomeNames = [numOutcomes]string{"ok", "no_bid", "timeout", "conn", "status_4xx", "status_5xx", "other", "deadline_miss"}

// String returns the outcome's name as used in JSON and text reports.
func (o Outcome) String() string {
	if o < numOutcomes {
		return outcomeNames[o]
	}
	return fmt.Sprintf("outcome(%d)", uint8(o))
}

// IsError reports whether o is one of the Err* outcomes.
func (o Outcome) IsError() bool { return o >= ErrTimeout && o <= ErrOther }

// Worker is the per-goroutine state handed to Target.Do. The harness creates
// one per worker goroutine and reuses it for every request that goroutine
// sends, so a Target can keep scratch buffers and objects in it without
// locking. A Worker must not be retained or shared across goroutines.
type Worker struct {
	ID       int        // index within its load, from 0
	Seq      uint64     // requests this worker sent before the current one
	Rand     *rand.Rand // seeded from the run's Seed, the load index and ID: a fixed Seed draws the same streams
	Buf      []byte     // scratch for the Target (the request body, ...); the harness never touches it
	Deadline time.Time  // hard deadline of the current request: intended send time + Timeout; zero: none
	State    any        // the Target's own per-worker objects (a reusable request, a client stub)
}
