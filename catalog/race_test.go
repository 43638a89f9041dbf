//go:build race

package catalog_test

// raceEnabled: the race detector makes sync.Pool drop items at random, so
// allocation counts are not asserted under it.
const raceEnabled = true
