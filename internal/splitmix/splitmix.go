// Package splitmix is splitmix64, the generator of rtbd's synthetic data
// (the feeds of ingest/feedgen, the demo's user profiles): tiny, fast, and
// fully determined by its seed, so the same options write the same bytes
// on every machine and in every release.
package splitmix

// Mix is splitmix64's finalizer: a bijective scramble of x, also good for
// deriving independent seeds (Mix(seed) ^ Mix(i)).
func Mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// Rand is a splitmix64 stream whose state is S. The zero value is the
// stream of seed 0. Not safe for concurrent use.
type Rand struct{ S uint64 }

// Uint64 returns the next number of the stream.
func (r *Rand) Uint64() uint64 {
	r.S += 0x9e3779b97f4a7c15
	return Mix(r.S)
}

// IntN returns a number in [0, n); n must be > 0.
func (r *Rand) IntN(n int) int { return int(r.Uint64() % uint64(n)) }

// Float64 returns a number in [0, 1).
func (r *Rand) Float64() float64 { return float64(r.Uint64()>>11) / (1 << 53) }
