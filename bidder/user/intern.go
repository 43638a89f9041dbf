package user

import (
	"sync"
	"sync/atomic"
)

// maxInterned bounds the Interner: segments come from a small vocabulary;
// past this many distinct strings, new ones are allocated per decode.
const maxInterned = 1024

// Interner hands out one shared string per distinct segment, so that
// decoding a profile does not allocate its segments. Lookups are one atomic
// load and a map read; additions copy the map (bounded by maxInterned).
type Interner struct {
	m  atomic.Pointer[map[string]string]
	mu sync.Mutex
}

func (in *Interner) intern(b []byte) string {
	if m := in.m.Load(); m != nil {
		if s, ok := (*m)[string(b)]; ok { // no allocation: map lookup by string(b)
			return s
		}
	}
	s := string(b)
	in.mu.Lock()
	defer in.mu.Unlock()
	old := in.m.Load()
	if old != nil {
		if t, ok := (*old)[s]; ok {
			return t
		}
		if len(*old) >= maxInterned {
			return s
		}
	}
	var n map[string]string
	if old == nil {
		n = make(map[string]string, 16)
	} else {
		n = make(map[string]string, len(*old)+1)
		for k, v := range *old {
			n[k] = v
		}
	}
	n[s] = s
	in.m.Store(&n)
	return s
}

// Decode is DecodeProfile sharing the segment strings through in.
func (in *Interner) Decode(b []byte, p *Profile) error { return decodeProfile(b, p, in) }
