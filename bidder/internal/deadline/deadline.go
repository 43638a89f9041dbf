// Package deadline is the context of one request's store lookups: a
// deadline and nothing else, reused with the request's pooled state.
package deadline

import (
	"context"
	"sync"
	"time"
)

// Ctx is the context of one bid request's lookups (or of one /event,
// /click or /match store call): a deadline and nothing else, reused with
// the request state instead of allocating a context.WithDeadline per
// request. The zero value is a context whose deadline has passed.
//
// Stores that only call Err (the local catalog and the Pebble user store)
// cost nothing: Err compares the clock with the deadline. A store that waits
// on Done or derives contexts (the gRPC catalog client) makes it create, on
// first use, a standard context.WithDeadline that it then delegates to,
// Value included, so that contexts derived from it attach to that standard
// one (no goroutine per call, as context.WithCancel would start for an
// unknown parent type). Reset cancels it.
//
// Methods are safe for concurrent use (gRPC may call Done from its own
// goroutines); Reset must only be called when no lookup is running.
type Ctx struct {
	deadline time.Time

	mu     sync.Mutex
	std    context.Context // lazily created; nil until Done or Value
	cancel context.CancelFunc
}

// Reset cancels the standard context, if any, and sets a new deadline.
func (c *Ctx) Reset(deadline time.Time) {
	c.mu.Lock()
	if c.cancel != nil {
		c.cancel()
	}
	c.std, c.cancel = nil, nil
	c.deadline = deadline
	c.mu.Unlock()
}

func (c *Ctx) standard() context.Context {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.std == nil {
		c.std, c.cancel = context.WithDeadline(context.Background(), c.deadline)
	}
	return c.std
}

// Deadline implements context.Context.
func (c *Ctx) Deadline() (time.Time, bool) { return c.deadline, true }

// Done implements context.Context.
func (c *Ctx) Done() <-chan struct{} { return c.standard().Done() }

// Err implements context.Context: DeadlineExceeded once the deadline has
// passed (what the standard context would say, without its timer).
func (c *Ctx) Err() error {
	c.mu.Lock()
	std := c.std
	c.mu.Unlock()
	if std != nil {
		if err := std.Err(); err != nil {
			return err
		}
	}
	if !time.Now().Before(c.deadline) {
		return context.DeadlineExceeded
	}
	return nil
}

// Value implements context.Context. It carries no values of its own; the
// lookup is delegated so that the context package's own parent discovery
// finds the standard context.
func (c *Ctx) Value(key any) any { return c.standard().Value(key) }

// String describes the context (the context package prints parents with it).
func (c *Ctx) String() string { return "deadline.Ctx" }
