package deadline

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestCtx: the pooled context behaves as a deadline context for
// both Err-only stores and ones that wait on Done or derive contexts.
func TestCtx(t *testing.T) {
	var c Ctx
	c.Reset(time.Now().Add(30 * time.Millisecond))
	if c.Err() != nil {
		t.Fatal("Err before the deadline")
	}
	child, cancel := context.WithCancel(&c)
	defer cancel()
	select {
	case <-child.Done():
		if !errors.Is(c.Err(), context.DeadlineExceeded) || child.Err() == nil {
			t.Errorf("after Done: %v %v", c.Err(), child.Err())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Done not closed at the deadline")
	}
	// Reuse: a new deadline, a fresh Done channel.
	c.Reset(time.Now().Add(time.Hour))
	if c.Err() != nil {
		t.Fatal("Reset did not clear Err")
	}
	select {
	case <-c.Done():
		t.Fatal("Done closed after reset")
	default:
	}
	if d, ok := c.Deadline(); !ok || time.Until(d) < 59*time.Minute {
		t.Errorf("Deadline %v %v", d, ok)
	}
	// Err-only use never creates a timer; an expired deadline reports at once.
	c.Reset(time.Now().Add(-time.Millisecond))
	if !errors.Is(c.Err(), context.DeadlineExceeded) {
		t.Errorf("past deadline: %v", c.Err())
	}
	c.Reset(time.Time{})
}
