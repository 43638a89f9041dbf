package bench

import (
	"sync/atomic"

	"github.com/rtbd/rtbd/catalog/catalogpb"
)

// TalkWeights are the talk's three request weights: 3 products per request
// (light), 15 (medium, the normal case) and 30 (heavy, rare).
var TalkWeights = []int{3, 15, 30}

// requestStream hands out a fixed list of requests in order, cycling; safe
// for concurrent use. Every target of a scenario gets its own stream over
// the same list, so each sees the same requests in the same order.
type requestStream struct {
	reqs []*catalogpb.ProductMastersRequest
	next atomic.Uint64
}

func (s *requestStream) take() *catalogpb.ProductMastersRequest {
	i := s.next.Add(1) - 1
	return s.reqs[i%uint64(len(s.reqs))]
}
