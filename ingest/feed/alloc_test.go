//go:build !race

package feed_test

import (
	"testing"

	"github.com/rtbd/rtbd/ingest/feed"
)

// TestAllocsPerRow pins the reader's allocations: one string per upsert row
// (all its text shares it), plus a constant per feed.
func TestAllocsPerRow(t *testing.T) {
	const rows = 5000
	for _, format := range []feed.Format{feed.CSV, feed.JSONL} {
		data := genFeed(t, format, rows, false)
		allocs := testing.AllocsPerRun(3, func() {
			if n := readFeed(t, data, format); n != rows {
				t.Fatalf("read %d rows", n)
			}
		})
		perRow := allocs / rows
		t.Logf("%v: %.4f allocs/row (%.0f per feed of %d rows)", format, perRow, allocs, rows)
		if perRow > 1.01 {
			t.Errorf("%v: %.4f allocs/row, want <= 1 (+ a constant per feed)", format, perRow)
		}
	}
}
