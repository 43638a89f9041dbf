package cpuset

import (
	"errors"
	"runtime"
	"slices"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	n := runtime.NumCPU()
	if n < 2 {
		t.Skip("needs 2 CPUs")
	}
	for _, c := range []struct {
		in   string
		want []int
	}{{"0", []int{0}}, {"1", []int{1}}, {"0,1", []int{0, 1}}, {"0-1", []int{0, 1}}, {" 1 , 0 ", []int{1, 0}}, {"1,1", []int{1}}} {
		got, err := Parse(c.in)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("Parse(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	for _, in := range []string{"", "x", "-1", "1-0", "0-", ",", "99999", "0-99999", "1.5"} {
		if _, err := Parse(in); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "cpuset") {
			t.Errorf("Parse(%q) err = %v, want ErrInvalid", in, err)
		}
	}
	if got := Others([]int{0}); slices.Contains(got, 0) || len(got) != n-1 {
		t.Errorf("Others([0]) = %v on %d CPUs", got, n)
	}
	if got := Format([]int{0, 2, 3}); got != "0,2,3" {
		t.Errorf("Format = %q", got)
	}
}

// FuzzParse: any flag value gives CPUs of this machine or ErrInvalid,
// never a panic, and what it gives formats back to itself.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"0", "0,1", "0-1", "1-0", "a", "", "0-99999999999999999999", "-", ",,"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cpus, err := Parse(s)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Parse(%q): %v, not ErrInvalid", s, err)
			}
			return
		}
		for _, c := range cpus {
			if c < 0 || c >= runtime.NumCPU() {
				t.Fatalf("Parse(%q) = %v: CPU %d out of range", s, cpus, c)
			}
		}
		back, err := Parse(Format(cpus))
		if err != nil || !slices.Equal(back, cpus) {
			t.Fatalf("Parse(Format(%v)) = %v, %v", cpus, back, err)
		}
	})
}
