package cpuset

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	u := Usable()
	if len(u) < 2 {
		t.Skip("needs 2 CPUs")
	}
	a, b := strconv.Itoa(u[0]), strconv.Itoa(u[1])
	for _, c := range []struct {
		in   string
		want []int
	}{{a, u[:1]}, {b, u[1:2]}, {a + "," + b, u[:2]}, {" " + b + " , " + a + " ", []int{u[1], u[0]}}, {b + "," + b, u[1:2]}} {
		got, err := Parse(c.in)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("Parse(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	if u[1] == u[0]+1 {
		if got, err := Parse(a + "-" + b); err != nil || !slices.Equal(got, u[:2]) {
			t.Errorf("Parse(%s-%s) = %v, %v", a, b, got, err)
		}
	}
	for _, in := range []string{"", "x", "-1", "1-0", "0-", ",", "99999", "0-99999", "1.5"} {
		if _, err := Parse(in); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "cpuset") {
			t.Errorf("Parse(%q) err = %v, want ErrInvalid", in, err)
		}
	}
	if got := Others(u[:1]); slices.Contains(got, u[0]) || len(got) != len(u)-1 {
		t.Errorf("Others(%v) = %v, usable %v", u[:1], got, u)
	}
	if got := Format([]int{0, 2, 3}); got != "0,2,3" {
		t.Errorf("Format = %q", got)
	}
}

// FuzzParse: any flag value gives CPUs this process may use or ErrInvalid,
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
			if !slices.Contains(Usable(), c) {
				t.Fatalf("Parse(%q) = %v: CPU %d not usable", s, cpus, c)
			}
		}
		back, err := Parse(Format(cpus))
		if err != nil || !slices.Equal(back, cpus) {
			t.Fatalf("Parse(Format(%v)) = %v, %v", cpus, back, err)
		}
	})
}
