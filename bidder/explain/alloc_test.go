//go:build !race

package explain

import "testing"

// TestNilExplainAllocations: the bid path's nil Explain costs no
// allocation.
func TestNilExplainAllocations(t *testing.T) {
	if allocs := testing.AllocsPerRun(10, nilCalls); allocs != 0 {
		t.Errorf("%v allocations, want 0", allocs)
	}
}
