// Package cpuset pins processes to CPUs, so that on a small machine the
// harness and the server it measures do not fight over the same cores:
// the server runs under taskset(1) on its CPUs, the harness's own threads
// are moved to the others.
package cpuset

import (
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
)

// ErrInvalid is wrapped by Parse's errors.
var ErrInvalid = errors.New("cpuset: invalid CPU list")

// Parse reads a CPU list in taskset's -c form ("1", "0,2", "2-3") and
// checks each CPU against this machine's runtime.NumCPU.
func Parse(list string) ([]int, error) {
	n := runtime.NumCPU()
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
			if c >= n {
				return nil, fmt.Errorf("%w %q: CPU %d, this machine has %d (0-%d)", ErrInvalid, list, c, n, n-1)
			}
			if !seen[c] {
				seen[c] = true
				cpus = append(cpus, c)
			}
		}
	}
	return cpus, nil
}

// Others returns this machine's CPUs not in cpus.
func Others(cpus []int) []int {
	in := map[int]bool{}
	for _, c := range cpus {
		in[c] = true
	}
	var out []int
	for c := range runtime.NumCPU() {
		if !in[c] {
			out = append(out, c)
		}
	}
	return out
}

// Format writes cpus in taskset's -c form.
func Format(cpus []int) string {
	s := make([]string, len(cpus))
	for i, c := range cpus {
		s[i] = strconv.Itoa(c)
	}
	return strings.Join(s, ",")
}
