package bench

import (
	"context"
	"math/rand/v2"
)

// SelfCPU is selfCPU for the external tests.
var SelfCPU = selfCPU

// TargetFunc adapts a function to Target.
func TargetFunc(name string, do func(ctx context.Context, w *Worker) Outcome) Target {
	return funcTarget{name: name, do: do}
}

type funcTarget struct {
	name string
	do   func(ctx context.Context, w *Worker) Outcome
}

func (f funcTarget) Name() string                              { return f.name }
func (f funcTarget) Do(ctx context.Context, w *Worker) Outcome { return f.do(ctx, w) }

// NewWorker returns a Worker with the given ID and a Rand seeded from seed
// and id, for calling a Target outside a run.
func NewWorker(id int, seed uint64) *Worker {
	return &Worker{ID: id, Rand: rand.New(rand.NewPCG(seed, uint64(id)))}
}

// NewHTTPTarget is a Target sending one request to http://addr+path per
// Do: POST with body's output as JSON when body is set, GET otherwise.
func NewHTTPTarget(name, addr, path string, body func(w *Worker, dst []byte) []byte) Target {
	method := "GET"
	if body != nil {
		method = "POST"
	}
	uri := func(_ *Worker, dst []byte) []byte { return append(dst, path...) }
	return newHTTPTarget(name, addr, method, 1024, uri, body, nil)
}
