package bench

import "errors"

var (
	ErrInvalid       = errors.New("bench: invalid input")             // bad options, a malformed report
	ErrSchema        = errors.New("bench: unsupported report schema") // a report "schema" this package does not read
	ErrAborted       = errors.New("bench: run aborted")               // with the context's error; the partial Result is returned
	ErrNoPassingRate = errors.New("bench: no rate met the objective") // FindMaxRate: even the start rate failed
)
