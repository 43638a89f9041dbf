//go:build !linux || !cgo

package catalog

// MallocArenas: without cgo (or off Linux) Pebble allocates from the Go
// heap, and there are no C malloc arenas to bound.
const MallocArenas = 0

func mallocArenas() int { return -1 }
