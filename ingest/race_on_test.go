//go:build race

package ingest

// raceEnabled: the race detector slows Pebble and the feed generator about
// tenfold, so tests use smaller feeds under it.
const raceEnabled = true
