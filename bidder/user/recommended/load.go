package recommended

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"sync"
	"time"

	"github.com/rtbd/rtbd/bidder/user"
	"github.com/rtbd/rtbd/bidder/user/aerostore"
	"github.com/rtbd/rtbd/bidder/user/redisstore"
)

// Setter is the store Load writes to: pebblestore.Store, redisstore.Store and
// aerostore.Store.
type Setter interface {
	SetRecommended(ctx context.Context, uid string, rec []user.GroupIDs) error
}

// Options configure Load. Zero values take the defaults noted.
type Options struct {
	// Limits are the store's: user.max_groups groups, 100 ids per group.
	Limits user.Limits
	// Workers is how many writes run at once (lines of one uid go to one
	// worker, in file order). Default 1.
	Workers int
	// Timeout bounds each write. Default 5 s.
	Timeout time.Duration
	// Rejects receives "line N: reason" for each rejected or failed line,
	// the first MaxReported of them. nil: none.
	Rejects io.Writer
	// MaxReported is how many rejected lines are written to Rejects.
	// Default 100.
	MaxReported int
}

// Summary counts what Load did.
type Summary struct {
	// Lines read, blank ones included.
	Lines int
	// Set is the number of users whose Recommended products were written
	// (Cleared of them with an empty list).
	Set, Cleared int
	// Rejected lines: not parsable or breaking a rule (never written).
	Rejected int
	// Failed lines: well-formed, but the store refused this user (its
	// stored profile does not decode, or the write kept conflicting with
	// concurrent views).
	Failed int
}

// ErrStore is wrapped by Load's error when the store fails in a way that
// is not one user's (I/O, connection, timeout): the load stops there.
var ErrStore = errors.New("recommended: user store")

type job struct {
	n    int // line number
	line Line
}

// Load reads r line by line, parses each line (ParseLine) and sets its
// user's Recommended products in s, reporting rejected lines to
// o.Rejects. A line's own problem (a bad line, a user whose stored profile
// is corrupt, a write that kept conflicting) is counted and the load goes
// on; any other store error stops it with an error wrapping ErrStore that
// names the line (the lines before it may have been written). The
// returned Summary counts what was done either way.
func Load(ctx context.Context, s Setter, r io.Reader, o Options) (Summary, error) {
	if o.Workers <= 0 {
		o.Workers = 1
	}
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Second
	}
	if o.MaxReported <= 0 {
		o.MaxReported = 100
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var (
		mu       sync.Mutex
		sum      Summary
		reported int
	)
	reject := func(n int, err error, failed bool) {
		mu.Lock()
		defer mu.Unlock()
		if failed {
			sum.Failed++
		} else {
			sum.Rejected++
		}
		if o.Rejects == nil {
			return
		}
		if reported < o.MaxReported {
			fmt.Fprintf(o.Rejects, "line %d: %v\n", n, err)
		} else if reported == o.MaxReported {
			fmt.Fprintf(o.Rejects, "(more rejected lines are counted, not shown)\n")
		}
		reported++
	}
	queues := make([]chan job, o.Workers)
	var wg sync.WaitGroup
	for i := range queues {
		queues[i] = make(chan job, 64)
		wg.Add(1)
		go func(q <-chan job) {
			defer wg.Done()
			for j := range q {
				if ctx.Err() != nil {
					continue // drain
				}
				wctx, wcancel := context.WithTimeout(ctx, o.Timeout)
				err := s.SetRecommended(wctx, j.line.UID, j.line.Recommended)
				wcancel()
				switch {
				case err == nil:
					mu.Lock()
					sum.Set++
					if len(j.line.Recommended) == 0 {
						sum.Cleared++
					}
					mu.Unlock()
				case errors.Is(err, user.ErrInvalidUID), errors.Is(err, user.ErrInvalidProfile):
					reject(j.n, err, false)
				case errors.Is(err, user.ErrCorrupt), isConflict(err):
					reject(j.n, err, true)
				default:
					cancel(fmt.Errorf("%w: line %d (uid %q): %w", ErrStore, j.n, j.line.UID, err))
				}
			}
		}(queues[i])
	}
	seed := maphash.MakeSeed()
	br := bufio.NewReaderSize(r, 64<<10)
	var readErr error
	for n := 1; ctx.Err() == nil; n++ {
		b, tooLong, err := readLine(br)
		if err == io.EOF && b == nil {
			break
		}
		if err != nil && err != io.EOF {
			readErr = fmt.Errorf("recommended: reading line %d: %w", n, err)
			break
		}
		mu.Lock()
		sum.Lines++
		mu.Unlock()
		switch {
		case tooLong:
			reject(n, fmt.Errorf("%w: longer than %d bytes", ErrBadLine, MaxLineBytes), false)
			continue
		case len(bytes.TrimSpace(b)) == 0:
			continue
		}
		var j job
		j.n = n
		if perr := ParseLine(b, o.Limits, &j.line); perr != nil {
			reject(n, perr, false)
			continue
		}
		q := queues[maphash.String(seed, j.line.UID)%uint64(len(queues))]
		select {
		case q <- j:
		case <-ctx.Done():
		}
		if err == io.EOF {
			break
		}
	}
	for _, q := range queues {
		close(q)
	}
	wg.Wait()
	if readErr != nil {
		return sum, readErr
	}
	if cause := context.Cause(ctx); cause != nil {
		return sum, cause
	}
	return sum, nil
}

// isConflict reports whether err is a shared store's ErrConflict: the
// profile kept changing under the write (one hot user, not the store).
func isConflict(err error) bool {
	return errors.Is(err, redisstore.ErrConflict) || errors.Is(err, aerostore.ErrConflict)
}

// readLine returns the next line without its newline (nil at the end),
// whether it was longer than MaxLineBytes (then b is nil and the rest of
// the line has been skipped), and io.EOF with the last line when the
// input does not end in a newline.
func readLine(br *bufio.Reader) (b []byte, tooLong bool, err error) {
	var buf []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if !tooLong {
			if len(buf)+len(chunk) > MaxLineBytes+1 {
				tooLong, buf = true, nil
			} else {
				buf = append(buf, chunk...)
			}
		}
		switch {
		case err == bufio.ErrBufferFull:
			continue
		case err == io.EOF && len(buf) == 0 && !tooLong:
			return nil, false, io.EOF
		case err != nil && err != io.EOF:
			return nil, false, err
		}
		if tooLong {
			return nil, true, err
		}
		buf = bytes.TrimSuffix(buf, []byte("\n"))
		buf = bytes.TrimSuffix(buf, []byte("\r"))
		return buf, false, err
	}
}
