//go:build !race

package supply

import "testing"

// TestCheckAllocs pins Check at zero allocations for every fixture case
// (after the first sight of each site host, see registrableCache).
func TestCheckAllocs(t *testing.T) {
	ix := openFixture(t).Index()
	var sc Scratch
	for _, c := range loadCases(t) {
		r := requestOf(t, &c.Request, c.ExchangeDomain)
		ix.Check(r, &sc) // warm the registrable domain table
		p := Policy(c.Policy)
		if n := testing.AllocsPerRun(50, func() {
			v := ix.Check(r, &sc)
			_ = p.Refuse(&v)
		}); n != 0 {
			t.Errorf("%s: %v allocations per check, want 0", c.Name, n)
		}
	}
}
