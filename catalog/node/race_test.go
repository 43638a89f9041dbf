//go:build race

package node_test

// raceEnabled: the race detector multiplies memory use, so memory bounds
// are reported rather than asserted.
const raceEnabled = true
