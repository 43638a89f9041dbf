package target

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/rtbd/rtbd/bench"
)

// GRPCOptions configure a gRPC unary target.
type GRPCOptions struct {
	// Name is the target's name in results. Required.
	Name string
	// Conn is the client connection (its resolver and load balancing are
	// the caller's). Required. The target does not close it.
	Conn grpc.ClientConnInterface
	// Call makes one unary call on conn with ctx, which carries the
	// request's deadline. It runs on the worker's goroutine and may keep
	// per-worker request messages in w.State and draw from w.Rand.
	// Required.
	Call func(ctx context.Context, w *bench.Worker, conn grpc.ClientConnInterface) error
	// Classify maps Call's error to an outcome. nil: ClassifyGRPC.
	Classify func(err error) bench.Outcome
	// Timeout is used only when the worker has no deadline. Zero: 1 s.
	Timeout time.Duration
}

// GRPC is a bench.Target making one unary gRPC call per Do. Safe for
// concurrent use.
type GRPC struct {
	o GRPCOptions
}

// NewGRPC validates o and returns the target.
func NewGRPC(o GRPCOptions) (*GRPC, error) {
	var probs []string
	if o.Name == "" {
		probs = append(probs, "name: required")
	}
	if o.Conn == nil {
		probs = append(probs, "conn: required")
	}
	if o.Call == nil {
		probs = append(probs, "call: required")
	}
	if o.Timeout < 0 {
		probs = append(probs, fmt.Sprintf("timeout: must be >= 0, got %v", o.Timeout))
	}
	if len(probs) > 0 {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, probs)
	}
	if o.Classify == nil {
		o.Classify = ClassifyGRPC
	}
	o.Timeout = cmp.Or(o.Timeout, time.Second)
	return &GRPC{o: o}, nil
}

// Name implements bench.Target.
func (g *GRPC) Name() string { return g.o.Name }

// Do implements bench.Target.
func (g *GRPC) Do(ctx context.Context, w *bench.Worker) bench.Outcome {
	var cancel context.CancelFunc
	if w.Deadline.IsZero() {
		ctx, cancel = context.WithTimeout(ctx, g.o.Timeout)
	} else {
		ctx, cancel = context.WithDeadline(ctx, w.Deadline)
	}
	err := g.o.Call(ctx, w, g.o.Conn)
	cancel()
	return g.o.Classify(err)
}

// ClassifyGRPC maps a gRPC error to an outcome by status code:
// nil = OK; DeadlineExceeded = ErrTimeout; Unavailable = ErrConn;
// InvalidArgument, NotFound, AlreadyExists, PermissionDenied,
// Unauthenticated, FailedPrecondition, OutOfRange, ResourceExhausted and
// Aborted (the HTTP 4xx family) = ErrStatus4xx; Internal, Unknown,
// Unimplemented and DataLoss = ErrStatus5xx; Canceled and anything else =
// ErrOther. A plain context.DeadlineExceeded is ErrTimeout.
func ClassifyGRPC(err error) bench.Outcome {
	if err == nil {
		return bench.OK
	}
	st, ok := status.FromError(err)
	if !ok {
		if errors.Is(err, context.DeadlineExceeded) {
			return bench.ErrTimeout
		}
		return bench.ErrOther
	}
	switch st.Code() {
	case codes.OK:
		return bench.OK
	case codes.DeadlineExceeded:
		return bench.ErrTimeout
	case codes.Unavailable:
		return bench.ErrConn
	case codes.InvalidArgument, codes.NotFound, codes.AlreadyExists, codes.PermissionDenied,
		codes.Unauthenticated, codes.FailedPrecondition, codes.OutOfRange,
		codes.ResourceExhausted, codes.Aborted:
		return bench.ErrStatus4xx
	case codes.Internal, codes.Unknown, codes.Unimplemented, codes.DataLoss:
		return bench.ErrStatus5xx
	}
	return bench.ErrOther
}
