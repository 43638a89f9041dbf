//go:build linux

package wakeup

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"syscall"
	"time"

	"github.com/rtbd/rtbd/bench/internal/cpuset"
)

// pingPong returns o.Samples round trips (validated options).
func pingPong(ctx context.Context, o Options) ([]time.Duration, error) {
	var ping, pong [2]int // [0] read end, [1] write end; blocking
	if err := syscall.Pipe2(ping[:], syscall.O_CLOEXEC); err != nil {
		return nil, fmt.Errorf("wakeup: pipe: %w", err)
	}
	if err := syscall.Pipe2(pong[:], syscall.O_CLOEXEC); err != nil {
		syscall.Close(ping[0])
		syscall.Close(ping[1])
		return nil, fmt.Errorf("wakeup: pipe: %w", err)
	}
	// The echo thread owns pong[1] and closes it when it stops, so that a
	// prober waiting for an answer sees EOF, never a hang.
	closeAll := func() {
		for _, fd := range [...]int{ping[0], ping[1], pong[0]} {
			syscall.Close(fd)
		}
	}
	ready, echoDone := make(chan error, 1), make(chan error, 1)
	go echo(o.To, ping[0], pong[1], ready, echoDone)
	if err := <-ready; err != nil {
		closeAll()
		return nil, err
	}

	type out struct {
		rtts []time.Duration
		err  error
	}
	probed := make(chan out, 1)
	go func() {
		runtime.LockOSThread()
		restore, err := cpuset.PinThread(o.From)
		if err != nil {
			runtime.UnlockOSThread()
			probed <- out{nil, pinErr(err)}
			return
		}
		rtts, err := probe(ctx, o, ping[1], pong[0])
		unpin(restore) // before Measure returns: no thread is left pinned
		probed <- out{rtts, err}
	}()
	p := <-probed
	// Closing the ping write end ends the echo thread's read with EOF.
	syscall.Close(ping[1])
	ping[1] = -1
	eerr := <-echoDone
	closeAll()
	if p.err != nil {
		return nil, p.err
	}
	if eerr != nil {
		return nil, eerr
	}
	return p.rtts, nil
}

// unpin puts the calling locked thread's CPU set back and unlocks it. If
// that fails, the thread stays locked, and the runtime ends it with the
// goroutine: no thread of the process is left pinned for other work.
func unpin(restore func() error) {
	if restore() == nil {
		runtime.UnlockOSThread()
	}
}

// echo pins itself to cpu, says so on ready, then answers each byte read
// from in on out until in ends. It closes out when it stops (a prober
// waiting for an answer then sees EOF) and, its CPU set put back, says so
// on done.
func echo(cpu, in, out int, ready, done chan<- error) {
	runtime.LockOSThread()
	restore, err := cpuset.PinThread(cpu)
	if err != nil {
		runtime.UnlockOSThread()
		syscall.Close(out)
		ready <- pinErr(err)
		return
	}
	ready <- nil
	err = answer(in, out)
	unpin(restore)
	syscall.Close(out)
	done <- err
}

// answer writes back each byte read from in on out, until in ends.
func answer(in, out int) error {
	var b [1]byte
	for {
		n, err := syscall.Read(in, b[:])
		if err == syscall.EINTR {
			continue
		}
		if n <= 0 || err != nil {
			return nil
		}
		if _, err := write1(out, b[:]); err != nil {
			return fmt.Errorf("wakeup: echo write: %w", err)
		}
	}
}

// probe runs the samples on the calling (pinned) thread.
func probe(ctx context.Context, o Options, out, in int) ([]time.Duration, error) {
	rtts := make([]time.Duration, 0, o.Samples)
	var b [1]byte
	for range o.Samples {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("wakeup: %w", err)
		}
		for t := time.Now(); time.Since(t) < o.Gap; {
			// Spin: this CPU stays busy while the echo's goes idle.
		}
		t0 := time.Now()
		if _, err := write1(out, b[:]); err != nil {
			return nil, fmt.Errorf("wakeup: write: %w", err)
		}
		for {
			n, err := syscall.Read(in, b[:])
			if err == syscall.EINTR {
				continue
			}
			if n == 1 {
				break
			}
			// EOF or an error: the echo thread stopped answering (its
			// error, if any, is reported too).
			return nil, fmt.Errorf("%w (read: %v)", errEchoGone, err)
		}
		rtts = append(rtts, time.Since(t0))
	}
	return rtts, nil
}

var errEchoGone = errors.New("wakeup: echo thread gone")

func write1(fd int, b []byte) (int, error) {
	for {
		n, err := syscall.Write(fd, b)
		if err != syscall.EINTR {
			return n, err
		}
	}
}

// pinErr says which CPU could not be used (outside the process's allowed
// set, typically) as an invalid option.
func pinErr(err error) error {
	return fmt.Errorf("%w: %w", ErrInvalid, err)
}
