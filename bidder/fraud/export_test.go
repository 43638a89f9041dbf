package fraud

// Snapshot returns the snapshot in use (immutable), for the external tests.
func (l *Lists) Snapshot() *Snapshot { return l.snap.Load() }
