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

// IsWireResponse reports whether v is an answer of the WireStore path (the
// encoded bytes the server sends as they are).
func IsWireResponse(v any) bool { _, ok := v.(*wireResponse); return ok }
