// Package cpuset pins processes to CPUs, so that on a small machine the
// harness and the server it measures do not fight over the same cores:
// the server runs under taskset(1) on its CPUs, the harness's own threads
// are moved to the others.
package cpuset

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
)

// ErrInvalid is wrapped by Parse's errors.
var ErrInvalid = errors.New("cpuset: invalid CPU list")

// Parse reads a CPU list in taskset's -c form ("1", "0,2", "2-3") and
// checks that this process may use each CPU (Usable).
func Parse(list string) ([]int, error) {
	usable := Usable()
	seen := map[int]bool{}
	var cpus []int
	for _, part := range strings.Split(list, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		a, err := strconv.Atoi(lo)
		b := a
		if err == nil && isRange {
			b, err = strconv.Atoi(hi)
		}
		if err != nil || a < 0 || b < a {
			return nil, fmt.Errorf("%w %q: want e.g. 1 or 0,2 or 2-3", ErrInvalid, list)
		}
		for c := a; c <= b; c++ {
			if !slices.Contains(usable, c) {
				return nil, fmt.Errorf("%w %q: CPU %d, this process may use %s", ErrInvalid, list, c, Format(usable))
			}
			if !seen[c] {
				seen[c] = true
				cpus = append(cpus, c)
			}
		}
	}
	return cpus, nil
}

// Others returns the CPUs this process may use (Usable) not in cpus.
func Others(cpus []int) []int {
	var out []int
	for _, c := range Usable() {
		if !slices.Contains(cpus, c) {
			out = append(out, c)
		}
	}
	return out
}

// Usable returns the CPUs this process may run on, in order: Allowed
// where the system says (under taskset or a container's cpuset their
// numbers need not start at 0: runtime.NumCPU counts them, it does not
// number them), else 0 to runtime.NumCPU()-1.
func Usable() []int {
	if cpus, err := Allowed(); err == nil && len(cpus) > 0 {
		return cpus
	}
	cpus := make([]int, runtime.NumCPU())
	for i := range cpus {
		cpus[i] = i
	}
	return cpus
}

// Format writes cpus in taskset's -c form.
func Format(cpus []int) string {
	s := make([]string, len(cpus))
	for i, c := range cpus {
		s[i] = strconv.Itoa(c)
	}
	return strings.Join(s, ",")
}
