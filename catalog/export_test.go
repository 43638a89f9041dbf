package catalog

// MallocArenasNow exposes mallocArenas to the external tests.
var MallocArenasNow = mallocArenas

// HoldVersion takes a reference on the version serving now, as a request in
// flight does, and returns its name and the release.
func HoldVersion(l *Local) (string, func()) {
	v, err := l.acquire()
	if err != nil {
		panic(err)
	}
	return v.name, v.release
}

// PutKey and SweepVersions expose putKey and sweepVersions to the external
// tests and benchmarks.
var (
	PutKey        = putKey
	SweepVersions = sweepVersions
)

// GroupBounds returns the [lower, upper) key range holding group's products.
func GroupBounds(group int64) (lower, upper []byte) {
	lower = AppendKey(make([]byte, 0, KeyLen), group, 0)
	upper = AppendKey(make([]byte, 0, KeyLen), group+1, 0)
	return lower, upper
}

// IsWireResponse reports whether v is an answer of the WireStore path (the
// encoded bytes the server sends as they are).
func IsWireResponse(v any) bool { _, ok := v.(*wireResponse); return ok }

// SetMaxChainKeys lowers the bound of a version's chain of changes and
// returns the restore.
func SetMaxChainKeys(n int) (restore func()) {
	old := maxChainKeys
	maxChainKeys = n
	return func() { maxChainKeys = old }
}
