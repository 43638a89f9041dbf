package bench

import "errors"

var (
	// ErrInvalid is wrapped by every options validation error and by
	// malformed input to LoadReport/ReadReport.
	ErrInvalid = errors.New("bench: invalid input")
	// ErrSchema is wrapped when a report's "schema" is not one this package
	// reads.
	ErrSchema = errors.New("bench: unsupported report schema")
	// ErrAborted is wrapped (together with the context's error) when a run
	// stops early because its context was cancelled; the partial Result is
	// still returned.
	ErrAborted = errors.New("bench: run aborted")
	// ErrNoPassingRate is returned by FindMaxRate when even the start rate
	// misses the objective.
	ErrNoPassingRate = errors.New("bench: no rate met the objective")
)
