package catalog

import "errors"

// Errors returned by every product store (the local index and the remote
// client alike). They are wrapped with context; test with errors.Is.
var (
	// ErrInvalidArgument: the request is malformed (non-positive group id,
	// too many ids). gRPC: codes.InvalidArgument.
	ErrInvalidArgument = errors.New("catalog: invalid argument")
	// ErrUnavailable: no catalog node could answer. gRPC: codes.Unavailable.
	ErrUnavailable = errors.New("catalog: unavailable")
	// ErrDeadline: the caller's deadline passed (or it was cancelled) before
	// the answer. gRPC: codes.DeadlineExceeded / codes.Canceled.
	ErrDeadline = errors.New("catalog: deadline exceeded")
	// ErrClosed: the store was closed.
	ErrClosed = errors.New("catalog: closed")
	// ErrCorrupt: the index on disk could not be read.
	ErrCorrupt = errors.New("catalog: corrupt index")
	// ErrUnreadAnswers: the server refused a call because its connection
	// already holds as many bytes of answers its client has not read as
	// it may (catalog.max_conn_unread_bytes). gRPC: codes.ResourceExhausted.
	ErrUnreadAnswers = errors.New("catalog: too many unread answers on the connection")
)
