package demoimg

import (
	"encoding/xml"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for path, want := range map[string][2]int64{
		"/demo/img/3/1234.svg": {3, 1234},
		"/demo/img/1/1.svg":    {1, 1},
	} {
		g, id, ok := Parse([]byte(path))
		if !ok || g != want[0] || id != want[1] {
			t.Errorf("%s: %d %d %v", path, g, id, ok)
		}
	}
	for _, path := range []string{"/demo/img/3/1234.jpg", "/demo/img/3.svg", "/demo/img//1.svg", "/demo/img/0/1.svg",
		"/demo/img/-1/2.svg", "/demo/img/1/2/3.svg", "/other/1/2.svg", "/demo/img/1/99999999999999999999.svg", "/demo/img/1/2a.svg"} {
		if _, _, ok := Parse([]byte(path)); ok {
			t.Errorf("%s: accepted", path)
		}
	}
}

// TestAppend checks that an image is well-formed XML, shows its id, and is
// the same for the same product and different for another.
func TestAppend(t *testing.T) {
	a := string(Append(nil, 2, 77))
	if err := xml.Unmarshal([]byte(a), new(struct{})); err != nil {
		t.Fatalf("not XML: %v\n%s", err, a)
	}
	if !strings.Contains(a, ">#77<") || !strings.HasPrefix(a, "<svg ") {
		t.Errorf("%s", a)
	}
	if string(Append(nil, 2, 77)) != a {
		t.Error("not deterministic")
	}
	differ := 0
	for id := int64(1); id <= 20; id++ {
		if string(Append(nil, 2, id)) != a {
			differ++
		}
	}
	if differ != 20 {
		t.Errorf("%d of 20 other ids differ", differ)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte("/demo/img/3/1234.svg"))
	f.Add([]byte("/demo/img/"))
	f.Fuzz(func(t *testing.T, path []byte) {
		g, id, ok := Parse(path)
		if ok && (g <= 0 || id <= 0) {
			t.Fatalf("%q: %d %d", path, g, id)
		}
	})
}
