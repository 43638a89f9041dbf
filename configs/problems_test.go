package configs

import (
	"reflect"
	"strings"
	"testing"
)

func TestFileProblems(t *testing.T) {
	lines := map[string]int{"a": 1, "a.b": 2, "a.b[0]": 3}
	p := NewFileProblems(func(key string) int { return lines[key] }, 5)
	a := p.Sub("a")
	a.Addf("b[0]", "bad item")
	a.Addf("b", "missing")      // below b has a problem: dropped
	a.Addf("b[0].c", "bad")     // above has one: dropped
	a.Addf("bc", "other key")   // not below b
	p.Addf("", "whole file")    // no key, no line
	a.Addf("", "section %d", 1) // "a" is above a.b[0]: dropped
	want := []string{"a.b[0]: bad item (line 3)", "a.bc: other key", "whole file"}
	if got := p.List(); !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	for i := range 5 {
		p.Addf("x"+strings.Repeat("x", i), "more")
	}
	if got := p.List(); len(got) != 6 || got[4] != "xx: more" || got[5] != MaxProblemsNote {
		t.Fatalf("at the limit: %q", got)
	}
	var plain Problems // the zero Problems keeps every problem
	plain.Addf("k", "one")
	plain.Addf("k", "two")
	if len(plain.List()) != 2 {
		t.Fatalf("zero Problems: %q", plain.List())
	}
}

func TestSuggest(t *testing.T) {
	known := []string{"countries", "regions", "os"}
	for key, want := range map[string]string{"contries": "countries", "region": "regions", "o": "os", "budget": ""} {
		if got := Suggest(key, known); got != want {
			t.Errorf("Suggest(%q) = %q, want %q", key, got, want)
		}
	}
}
